"""learner/replay.py: several tasks' groups replayed at once, their model calls batched together,
with the same results as replaying one task at a time; and the sandbox replays run in: the
strongest isolating one, `local` only by name and with a warning, never silently."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from learner.replay import ReplaySettings, all_or_none, as_served, replay
from learner.tasks import check_task, run_attempt, synthetic_suite
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
from runtime.sandbox import BackendName, BackendStatus, IsolationWarning, SandboxUnavailable


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


def test_concurrent_tasks_share_batches_and_change_no_result(
    backend: LocalBackend, tmp_path: Path, isolating_backend: BackendName
) -> None:
    tasks = synthetic_suite(seed=0, per_family=1)[:3]
    executor = ExecutorSettings(max_turns=2, sampling=SamplingParams(temperature=1.0, max_tokens=24))
    settings = ReplaySettings(
        group_size=2, sandbox=isolating_backend, seed=5, executor=executor, concurrent_tasks=3
    )

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
    backend: LocalBackend, tmp_path: Path, isolating_backend: BackendName
) -> None:
    tasks = synthetic_suite(seed=0, per_family=1)[:2]
    executor = ExecutorSettings(max_turns=1, sampling=SamplingParams(temperature=1.0, max_tokens=24))
    training = ReplaySettings(group_size=2, sandbox=isolating_backend, seed=5, executor=executor)
    store = MemoryStore.open(tmp_path / "memory.db")
    free = asyncio.run(replay(tasks, backend, store, tmp_path / "snapshots", training, "grpo"))
    served = asyncio.run(
        replay(tasks, backend, store, tmp_path / "snapshots", as_served(training, temperature=0.3), "gate")
    )

    free_calls = [store.trajectories.calls(a.episode_id)[0] for a in free]
    served_calls = [store.trajectories.calls(a.episode_id)[0] for a in served]
    assert not any(call.sampling.get("constrained") for call in free_calls)
    assert not any(is_action_prefix(call.text) for call in free_calls)  # an untrained model writes anything
    assert all(call.sampling["constrained"] for call in served_calls)
    assert all(is_action_prefix(call.text) for call in served_calls)
    # ... at the serving temperature (`[executor] temperature`), training replays at 1
    assert {call.sampling["temperature"] for call in free_calls} == {1.0}
    assert {call.sampling["temperature"] for call in served_calls} == {0.3}
    assert as_served(training, temperature=0.3).executor.sampling == replace(
        executor.sampling, constrained=True, temperature=0.3
    )
    assert as_served(training).executor.sampling.temperature == ExecutorSettings().sampling.temperature


class OneCommand:
    """An executor whose first reply runs `echo hi` and whose second completes the task."""

    name = "one-command"

    async def complete(self, messages: Sequence[dict[str, Any]], sampling: SamplingParams) -> Completion:
        done = any(message["role"] == "assistant" for message in messages)
        commands = [] if done else [{"keystrokes": "echo hi", "timeout": 5}]
        action = {"analysis": "done" if done else "", "commands": commands, "task_complete": done}
        return Completion(json.dumps(action), [], [], [], "stop", self.name, sampling=sampling)


def replay_once(tmp_path: Path, settings: ReplaySettings) -> tuple[list[Any], MemoryStore]:
    store = MemoryStore.open(tmp_path / "memory.db")
    tasks = synthetic_suite(seed=0, per_family=1)[:1]
    return asyncio.run(replay(tasks, OneCommand(), store, tmp_path / "snapshots", settings, "sandbox")), store


def test_replays_run_in_the_strongest_isolating_sandbox_unless_told_otherwise(
    tmp_path: Path, sandbox_statuses: dict[str, BackendStatus], require_sandbox: Callable[[str], None]
) -> None:
    strongest = next((name for name in ("docker", "bwrap") if sandbox_statuses[name].available), None)
    if strongest is None:
        require_sandbox("bwrap")
    settings = ReplaySettings(group_size=2)
    assert settings.sandbox == "auto"

    attempts, store = replay_once(tmp_path, settings)

    backends = {store.trajectories.executor_episode(a.episode_id).sandbox_backend for a in attempts}
    assert backends == {strongest}


def test_without_an_isolating_sandbox_no_learner_path_runs_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    task = synthetic_suite(seed=0, per_family=1)[0]

    with pytest.raises(SandboxUnavailable, match="choose backend 'local'") as refused:
        replay_once(tmp_path, ReplaySettings(group_size=1))
    with pytest.raises(SandboxUnavailable):
        asyncio.run(run_attempt(task, task.reference))
    with pytest.raises(SandboxUnavailable):
        asyncio.run(check_task(task))
    assert "apt-get install bubblewrap" in str(refused.value)


def test_local_runs_only_when_named_and_says_so(tmp_path: Path) -> None:
    task = synthetic_suite(seed=0, per_family=1)[0]

    with pytest.warns(IsolationWarning, match="NO isolation"):
        attempts, store = replay_once(tmp_path, ReplaySettings(group_size=1, sandbox="local"))
    with pytest.warns(IsolationWarning):
        checked = asyncio.run(check_task(task, "local"))

    assert store.trajectories.executor_episode(attempts[0].episode_id).sandbox_backend == "local"
    assert checked.sound


def test_a_failing_attempt_ends_its_siblings_before_the_failure_leaves_the_replay() -> None:
    # Left running, they were cancelled at asyncio.run's shutdown together with asyncio's own
    # subprocess-start tasks, and CPython 3.11 then hung waiting for an exit never reported.
    ended: list[int] = []

    async def slow(index: int) -> int:
        try:
            await asyncio.sleep(30)
        finally:
            ended.append(index)
        return index

    async def failing() -> int:
        await asyncio.sleep(0.01)
        raise UnicodeEncodeError("utf-8", "\udcda", 0, 1, "surrogates not allowed")

    async def run() -> None:
        with pytest.raises(UnicodeEncodeError):  # the failure itself, not an ExceptionGroup
            await all_or_none([slow(1), failing(), slow(2)])
        assert sorted(ended) == [1, 2]  # ended before the failure came out
        assert await all_or_none([asyncio.sleep(0, result=n) for n in (1, 2, 3)]) == [1, 2, 3]

    asyncio.run(run())
