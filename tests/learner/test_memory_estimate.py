"""learner/memory_estimate.py against the tiny models as loaded: parameters, LoRA's trainable
parameters and the key-value cache per token exactly; the activations backward keeps (every
tensor autograd saves, counted by storage) within 2x, the estimate being a formula for real
models where this one's vocabulary dominates; and the refusal, with its numbers, when the device
has too little free."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from learner.cycle import CycleSettings
from learner.logprobs import token_logprobs
from learner.memory_estimate import (
    EstimateError,
    estimate_cycle,
    free_memory,
    unmatched_targets,
    weight_shapes,
)
from learner.policy import LoraSettings, TrainablePolicy
from learner.rows import RowSettings
from runtime.executor import ExecutorLoadError, LocalModel, build_tiny_model

TOKENS = 256


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("tiny")
    return {arch: build_tiny_model(root / arch, architecture=arch) for arch in ("qwen3", "llama")}


def settings(
    lora: LoraSettings | None = None, *, device: str = "cpu", dtype: str | None = None
) -> CycleSettings:
    rows = RowSettings(token_budget=TOKENS, max_row_tokens=TOKENS)
    base = CycleSettings(rows=rows, device=device, dtype=dtype)
    return replace(base, train=replace(base.train, lora=lora or LoraSettings(), logprob_chunk_tokens=TOKENS))


@pytest.mark.parametrize("architecture", ["qwen3", "llama"])
@pytest.mark.parametrize("lora", [LoraSettings(), LoraSettings(rank=4, target_modules=("q_proj", "v_proj"))])
def test_parameters_and_trainable_parameters_are_exact(
    models: dict[str, Path], architecture: str, lora: LoraSettings
) -> None:
    model = LocalModel.load(models[architecture])
    estimate = estimate_cycle(models[architecture], settings(lora))
    policy = TrainablePolicy.create(model, lora)
    loaded = sum(p.numel() * p.element_size() for p in policy.module.parameters() if not p.requires_grad)
    assert estimate.weights == loaded and estimate.weight_copies == 1  # float32, tied embeddings once
    assert estimate.trainable == sum(p.numel() for p in policy.trainable_parameters())
    assert estimate.adapter_and_optimizer == 20 * estimate.trainable  # and the version in service's


def test_activations_within_2x_of_what_backward_keeps_and_kv_cache_exact(models: dict[str, Path]) -> None:
    model = LocalModel.load(models["qwen3"])
    estimate = estimate_cycle(models["qwen3"], settings())
    policy = TrainablePolicy.create(model, LoraSettings())
    weights = {p.untyped_storage().data_ptr() for p in policy.module.parameters()}
    saved: dict[int, int] = {}

    def keep(tensor: torch.Tensor) -> torch.Tensor:
        saved[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
        return tensor

    ids = torch.randint(0, model.vocab_size, (1, TOKENS + 1), generator=torch.Generator().manual_seed(0))
    with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
        token_logprobs(policy.module, ids[:, :-1], ids[:, 1:], chunk_tokens=TOKENS)
    measured = sum(size for pointer, size in saved.items() if pointer not in weights)
    assert 0.5 <= measured / estimate.activations <= 2.0

    with torch.no_grad():
        output = policy.module(input_ids=ids, use_cache=True)
    kv = sum(
        t.numel() * t.element_size()
        for layer in output.past_key_values.layers
        for t in (layer.keys, layer.values)
    )
    sequences = settings().replay.concurrent_tasks * settings().replay.group_size
    assert estimate.kv_cache == kv // (TOKENS + 1) * TOKENS * sequences


def test_half_precision_halves_the_weights(models: dict[str, Path]) -> None:
    full = estimate_cycle(models["qwen3"], settings())
    half = estimate_cycle(models["qwen3"], settings(dtype="bfloat16"))
    assert half.weights * 2 == full.weights and half.dtype == torch.bfloat16
    assert half.adapter_and_optimizer == full.adapter_and_optimizer  # the adapter stays float32


def test_a_cycle_that_cannot_fit_is_refused_with_its_numbers(models: dict[str, Path]) -> None:
    estimate = estimate_cycle(models["qwen3"], settings())
    assert "peak" in estimate.line() and "0.65M parameters x 1 copy" in estimate.line()
    refusal = estimate.refusal(estimate.peak // 2)
    assert refusal is not None
    assert f"needs about {estimate.peak / (1 << 20):.1f} MiB on cpu" in refusal
    assert f"{estimate.peak // 2 / (1 << 20):.1f} MiB is free" in refusal and "lora_rank" in refusal
    assert estimate.refusal(estimate.peak * 2) is None
    assert estimate.refusal(None) is None  # free memory unknown: no refusal on a guess
    free = free_memory(torch.device("cpu"))
    assert free is not None and free > 0


def test_what_cannot_be_estimated_says_why(models: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(EstimateError, match="config.json"):
        estimate_cycle(tmp_path, settings())
    if not torch.cuda.is_available():
        with pytest.raises(ExecutorLoadError, match="torch sees no CUDA GPU"):
            estimate_cycle(models["qwen3"], settings(device="cuda"))


def test_the_refusal_names_what_lowers_the_larger_of_activations_and_cache(models: dict[str, Path]) -> None:
    estimate = estimate_cycle(models["qwen3"], settings())
    big = max(estimate.activations, estimate.kv_cache)
    activations = replace(estimate, activations=2 * big)
    refusal = activations.refusal(activations.peak // 2)
    assert refusal is not None and "gradient_checkpointing = true" in refusal
    assert "micro_batch_tokens (the activations)" in refusal and "max_prompt_tokens" not in refusal
    checkpointed = replace(activations, gradient_checkpointing=True).refusal(activations.peak // 2)
    assert checkpointed is not None and "gradient_checkpointing" not in checkpointed  # already on
    cache = replace(estimate, kv_cache=2 * big)
    refusal = cache.refusal(cache.peak // 2)
    assert (
        refusal is not None and "max_prompt_tokens or max_completion_tokens (the key-value cache)" in refusal
    )
    assert "micro_batch_tokens" not in refusal and "gradient_checkpointing" not in refusal


@pytest.mark.parametrize("architecture", ["qwen3", "llama"])
def test_unmatched_targets_are_the_listed_names_no_module_ends_in(
    models: dict[str, Path], architecture: str
) -> None:
    shapes = weight_shapes(models[architecture])
    assert unmatched_targets(shapes, LoraSettings(target_modules=("q_proj", "self_attn.v_proj")))[0] == []
    missing, names = unmatched_targets(shapes, LoraSettings(target_modules=("q_proj", "qproj", "attn")))
    assert missing == ["qproj", "attn"]  # a name's last dotted parts, not any substring
    assert {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"} <= set(names)
    assert unmatched_targets(shapes, LoraSettings(target_modules="all-linear")) == ([], [])
