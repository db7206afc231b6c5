"""learner/data_parallel.py and its entry point learner/train_recorded.py: a real two-process
launch (`accelerate launch --multi_gpu --num_processes 2 ... --cpu`: gloo) trains the same adapter, from the same
gradients, as one process on the same recorded rows, within float tolerance."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from memory import MemoryStore, StoredCall
from runtime.executor import LocalModel, SamplingParams, build_tiny_model

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def record_groups(store: MemoryStore, model: LocalModel, groups: int = 3, size: int = 4) -> None:
    """`groups` GRPO groups of `size` single-call training episodes sampled from the tiny model,
    half of each group rewarded."""
    for group in range(groups):
        prompt = model.tokenizer.encode_chat([{"role": "user", "content": f"list the files, take {group}"}])
        for attempt in range(size):
            sampled = model.sample(
                prompt, SamplingParams(temperature=1.0, max_tokens=10, seed=group * 100 + attempt)
            )
            episode = store.trajectories.start_executor_episode(
                f"task {group}", split="train", group_id=f"grpo0:t{group}"
            )
            store.trajectories.record_call(
                episode,
                StoredCall(
                    role="executor", model=model.name, prompt_ids=prompt, completion_ids=sampled.ids,
                    completion_logprobs=sampled.logprobs, finish_reason="stop",
                    tokenizer_hash=model.tokenizer.hash, chat_template_hash=model.tokenizer.chat_template_hash,
                ),
            )  # fmt: skip
            store.trajectories.finish_executor_episode(episode, "succeeded", parse_failures=0, timeouts=0)
            store.episodes.record_reward(episode, float(attempt % 2), "verifier")


def train(command: list[str], model: Path, memory: Path, out: Path, *flags: str) -> str:
    """learner.train_recorded on the recorded rows, two steps; `command` starts it (python, or
    accelerate's launcher); `flags`: more of its options (--fsdp)."""
    arguments = [
        *("-m", "learner.train_recorded", "--cpu", "--model", str(model), "--memory", str(memory)),
        *("--output", str(out / "adapter"), "--checkpoints", str(out / "checkpoints")),
        *("--token-budget", "64", "--max-row-tokens", "64", "--steps", "2"),
        *("--learning-rate", "1e-2", "--lora-rank", "4", *flags),
    ]
    result = subprocess.run(
        [*command, *arguments], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=240
    )
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result.stdout


def launch_two() -> list[str]:
    """accelerate's torchrun launcher with two ranks (train_recorded's --cpu puts them on gloo)."""
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2"]
    return launch + ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]


def assert_trained_alike(tmp_path: Path, one: str, two: str) -> None:
    """The runs under tmp_path/one and tmp_path/two had the same gradients (the printed norms, and
    Adam's first moment after two steps: 0.1 g2 + 0.09 g1) and saved the same, trained adapter."""
    assert grad_norms(two) == pytest.approx(grad_norms(one), rel=1e-5) and len(grad_norms(one)) == 2
    moments = [
        torch.load(tmp_path / side / "checkpoints" / "step-000002" / "optimizer.pt")["state"]
        for side in ("one", "two")
    ]
    assert moments[0].keys() == moments[1].keys()
    for key in moments[0]:
        torch.testing.assert_close(
            moments[1][key]["exp_avg"], moments[0][key]["exp_avg"], rtol=1e-5, atol=1e-8
        )
    # Adam divides by sqrt(v), so an element whose gradient is near zero turns float-order noise
    # into up to a step (lr): 1% of it.
    adapters = [
        load_file(tmp_path / side / "adapter" / "adapter_model.safetensors") for side in ("one", "two")
    ]
    assert adapters[0].keys() == adapters[1].keys()
    for name in adapters[0]:
        torch.testing.assert_close(adapters[1][name], adapters[0][name], rtol=1e-4, atol=1e-5)
    assert any(name.endswith("lora_B.weight") and adapters[0][name].abs().sum() > 0 for name in adapters[0])


def grad_norms(output: str) -> list[float]:
    return [float(value) for value in re.findall(r"grad_norm\s+([0-9.]+)", output)]


def mismatches(output: str) -> list[float]:
    """The mismatch ratio mean and median of each step that prints one (the median needs every
    rank's tokens). The second step trains on rows the first step's weights did not sample."""
    found = re.findall(r"mismatch kl \S+ ratio ([0-9.]+) \[p5 [0-9.]+ p50 ([0-9.]+)", output)
    return [float(value) for pair in found for value in pair]


@pytest.mark.slow  # ~20 s: three Python processes importing torch, peft and accelerate
def test_two_processes_train_the_adapter_one_process_trains(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    model_dir = build_tiny_model(tmp_path / "tiny", seed=0)
    with MemoryStore.open(tmp_path / "memory.db") as store:
        record_groups(store, LocalModel.load(model_dir))

    one = train([sys.executable], model_dir, tmp_path / "memory.db", tmp_path / "one")
    two = train(launch_two(), model_dir, tmp_path / "memory.db", tmp_path / "two")

    packs = int(re.search(r"in (\d+) micro-batches over 2 ranks", two).group(1))  # type: ignore[union-attr]
    assert packs >= 3 and packs % 2 == 1  # both ranks work, and unevenly
    assert "over 1 ranks" in one
    assert_trained_alike(tmp_path, one, two)
    # The sampler/trainer mismatch is the whole batch's, gathered from both ranks, not one shard's.
    # (The first step's rows were sampled by its own weights: rounding only, not on the line.)
    assert mismatches(two) == pytest.approx(mismatches(one), rel=1e-5) and len(mismatches(one)) == 2
    assert mismatches(one) != [1.0, 1.0]
