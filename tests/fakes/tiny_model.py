"""Test helpers around the tiny executor model: a random LoRA adapter for it.

    adapter = build_tiny_adapter(model_dir, tmp_path / "v1", seed=1)   # PEFT format

The adapter's B matrices are random, not zero (`init_lora_weights=False`), so it changes what the
model samples from the first step, as a trained adapter would. Deterministic by seed.
"""

from __future__ import annotations

from pathlib import Path


def build_tiny_adapter(model_dir: Path, directory: Path, *, seed: int, rank: int = 4) -> Path:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(model_dir)
    config = LoraConfig(
        r=rank,
        lora_alpha=2 * rank,
        target_modules=["q_proj", "v_proj", "o_proj"],
        init_lora_weights=False,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        adapted = get_peft_model(base, config)
    adapted.save_pretrained(directory)
    return directory
