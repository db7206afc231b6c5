"""learner/replay.py: several tasks' groups replayed at once, their model calls batched together,
with the same results as replaying one task at a time."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from learner.replay import ReplaySettings, as_served, replay
from learner.tasks import synthetic_suite
from memory import MemoryStore
from runtime.executor import (
    Completion,
    LocalBackend,
    LocalModel,
    SamplingParams,
    build_tiny_model,
)
from runtime.executor.action_grammar import is_action_prefix
from runtime.executor.loop import ExecutorSettings


class Recording:
    """A LocalBackend that remembers the size of every batch it sampled."""

    def __init__(self, backend: LocalBackend) -> None:
        self.backend = backend
        self.name = backend.name
        self.batches: list[int] = []

    async def complete(self, messages: Sequence[dict[str, Any]], sampling: SamplingParams) -> Completion:
        self.batches.append(1)
        return await self.backend.complete(messages, sampling)

    async def complete_batch(
        self,
        conversations: Sequence[Sequence[dict[str, Any]]],
        sampling: SamplingParams,
        seeds: Sequence[int],
    ) -> list[Completion]:
        self.batches.append(len(conversations))
        return await self.backend.complete_batch(conversations, sampling, seeds)


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> LocalBackend:
    torch.set_num_threads(1)
    return LocalBackend(LocalModel.load(build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)))


def test_concurrent_tasks_share_batches_and_change_no_result(backend: LocalBackend, tmp_path: Path) -> None:
    tasks = synthetic_suite(seed=0, per_family=1)[:3]
    executor = ExecutorSettings(max_turns=2, sampling=SamplingParams(temperature=1.0, max_tokens=24))
    settings = ReplaySettings(group_size=2, seed=5, executor=executor, concurrent_tasks=3)

    def run(settings: ReplaySettings, name: str) -> tuple[list[Any], list[list[int]], list[int]]:
        store = MemoryStore.open(tmp_path / f"{name}.db")
        recording = Recording(backend)
        attempts = asyncio.run(replay(tasks, recording, store, tmp_path / "snapshots", settings, name))
        ids = [
            [i for call in store.trajectories.calls(a.episode_id) for i in call.completion_ids]
            for a in attempts
        ]
        return [replace(a, episode_id=0) for a in attempts], ids, recording.batches

    together, together_ids, together_batches = run(settings, "together")
    alone, alone_ids, alone_batches = run(replace(settings, concurrent_tasks=1), "alone")
    assert together == alone and together_ids == alone_ids  # batching changes only the speed
    assert [(a.task_id, a.index) for a in together] == [(t.id, i) for t in tasks for i in range(2)]
    assert together_batches[0] == 6  # the first turns of all three groups in one batch
    assert max(alone_batches) <= 2 and len(together_batches) < len(alone_batches)
    assert sum(together_batches) == sum(alone_batches)


def test_held_out_replays_keep_to_the_action_format_and_training_replays_sample_freely(
    backend: LocalBackend, tmp_path: Path
) -> None:
    tasks = synthetic_suite(seed=0, per_family=1)[:2]
    executor = ExecutorSettings(max_turns=1, sampling=SamplingParams(temperature=1.0, max_tokens=24))
    training = ReplaySettings(group_size=2, seed=5, executor=executor)
    store = MemoryStore.open(tmp_path / "memory.db")
    free = asyncio.run(replay(tasks, backend, store, tmp_path / "snapshots", training, "grpo"))
    served = asyncio.run(replay(tasks, backend, store, tmp_path / "snapshots", as_served(training), "gate"))

    free_calls = [store.trajectories.calls(a.episode_id)[0] for a in free]
    served_calls = [store.trajectories.calls(a.episode_id)[0] for a in served]
    assert not any(call.sampling.get("constrained") for call in free_calls)
    assert not any(is_action_prefix(call.text) for call in free_calls)  # an untrained model writes anything
    assert all(call.sampling["constrained"] for call in served_calls)
    assert all(is_action_prefix(call.text) for call in served_calls)
    assert as_served(training).executor.sampling == replace(executor.sampling, constrained=True)
