"""A Ray replay worker keeps no directory between calls (learner/ray_replay.py): Ray ends an
actor without a word, so whatever directory it held for its lifetime would be left in the
node's temp dir, one per worker per night. The worker's body is a plain class: driven here
in-process, without Ray, on the tiny model, against a temp dir of the test's own."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from learner.policy import LoraSettings, TrainablePolicy
from learner.ray_replay import LoadSettings, PolicyAdapter, ReplayWorker
from learner.replay import ReplaySettings
from learner.tasks import synthetic_suite
from runtime.executor import LocalModel, SamplingParams, build_tiny_model
from runtime.executor.loop import ExecutorSettings
from runtime.sandbox import BackendName


def ours(root: Path) -> list[str]:
    return sorted(path.name for path in root.iterdir() if path.name.startswith("temper-"))


@pytest.mark.slow  # ~10 s: torch, the tiny model loaded twice, two replays of one attempt
def test_a_replay_worker_keeps_no_directory_between_calls(
    tmp_path: Path, temp_root: Path, isolating_backend: BackendName
) -> None:
    torch.set_num_threads(1)
    model_dir = build_tiny_model(tmp_path / "tiny", seed=0)
    policy = TrainablePolicy.create(LocalModel.load(model_dir), LoraSettings(rank=4), seed=0)
    executor = ExecutorSettings(max_turns=1, sampling=SamplingParams(temperature=1.0, max_tokens=8))
    settings = ReplaySettings(group_size=1, sandbox=isolating_backend, executor=executor)
    tasks = synthetic_suite(seed=0, per_family=1)[:1]

    worker = ReplayWorker(str(model_dir), LoadSettings(), threads=1)
    assert ours(temp_root) == []
    for step in range(2):  # the first call loads the adapter from files, the second in place
        if step:
            with torch.no_grad():
                for parameter in policy.trainable_parameters():
                    parameter.add_(0.01)
        [replayed] = worker.replay(tasks, PolicyAdapter.of(policy), settings, f"x{step}")
        assert replayed.episode.task == tasks[0].instruction
        assert ours(temp_root) == []
