"""Any Hugging Face causal LM with a chat template is an executor the learner can train: a tiny
Qwen3 and a tiny Llama, built from config with the same in-process tokenizer, each replay a task
in a sandbox, take a GRPO step on the replayed episodes, and hand back an adapter that a freshly
loaded executor computes exactly as the trainer does."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from learner.replay import ReplaySettings, replay
from learner.rows import RowSettings, build_rows
from learner.tasks import synthetic_suite
from learner.train import GRPOTrainer, TrainSettings
from memory import MemoryStore
from runtime import BackendName
from runtime.executor import LocalBackend, LocalModel, SamplingParams, build_tiny_model
from runtime.executor.loop import ExecutorSettings

ARCHITECTURES = {"qwen3": "Qwen3ForCausalLM", "llama": "LlamaForCausalLM"}


@pytest.mark.parametrize("architecture", sorted(ARCHITECTURES))
def test_replay_step_and_adapter_round_trip(
    architecture: str, tmp_path: Path, isolating_backend: BackendName
) -> None:
    torch.set_num_threads(1)
    model_dir = build_tiny_model(tmp_path / "model", architecture=architecture, layers=1)  # type: ignore[arg-type]
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    assert config["architectures"] == [ARCHITECTURES[architecture]]
    trainer = GRPOTrainer(LocalModel.load(model_dir), TrainSettings(learning_rate=1e-2, checkpoint_every=0))
    store = MemoryStore.open(tmp_path / "memory.db")
    task = next(t for t in synthetic_suite(seed=0, per_family=1) if t.split == "train")
    settings = ReplaySettings(
        group_size=2,
        sandbox=isolating_backend,
        executor=ExecutorSettings(max_turns=1, sampling=SamplingParams(temperature=1.0, max_tokens=16)),
    )
    policy = LocalBackend(trainer.policy.sampler)
    attempts = asyncio.run(replay([task], policy, store, tmp_path / "snapshots", settings, "grpo0"))
    assert len(attempts) == 2

    # A random model's attempts fail alike; rewarded apart, the group has something to teach.
    trajectories = [
        replace(t, episode=replace(t.episode, reward=float(i)))
        for i, t in enumerate(store.trajectories.read(split="train"))
    ]
    assert [len(t.calls) for t in trajectories] == [1, 1]
    assert all(t.calls[0].model == trainer.policy.sampler.name for t in trajectories)
    rows = build_rows(trajectories, RowSettings(mask_truncated=False))
    metrics = trainer.step(rows)
    assert metrics.step == 1 and metrics.trained_tokens > 0 and metrics.grad_norm > 0

    served = LocalModel.load(model_dir)
    served.load_adapter("v1", trainer.save_adapter(tmp_path / "adapter"))
    call = trajectories[1].calls[0]
    trained = trainer.policy.sampler.logprobs_of(call.prompt_ids, call.completion_ids)
    adapted = served.logprobs_of(call.prompt_ids, call.completion_ids, adapter="v1")
    base = served.logprobs_of(call.prompt_ids, call.completion_ids)
    assert adapted == pytest.approx(trained, abs=1e-5)
    assert base == pytest.approx(call.completion_logprobs, abs=1e-4)  # the base is what sampled
    assert sum(adapted) > sum(base)  # towards the rewarded attempt
