"""A night: the day's episodes become tasks, the planner's episodes are imitated, the cycle gates
on the user's held-out tasks and the regression suite, and the version in service gets its
competence per kind of task stored for routing.

A tiny model from scratch, a handful of replays: the night's path, not what it learns.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from learner import ExecutorVersions
from learner.cycle import CycleSettings
from learner.night import NightSettings, run_night
from learner.replay import ReplaySettings, as_served
from learner.tasks import HarvestSettings, synthetic_suite
from learner.train import TrainSettings
from memory import BASE_VERSION, MemoryStore
from runtime.executor import SamplingParams, TaskKinds, build_tiny_model
from runtime.executor.loop import ExecutorSettings
from tests.learner.recorded import BACKEND, record_episode

ONE_TURN = ExecutorSettings(max_turns=1, sampling=SamplingParams(temperature=1.0, max_tokens=48))
COMMANDS = [
    ["sort notes.txt > sorted.txt"],
    ["cp notes.txt copy.txt"],
    ["wc -l < notes.txt > count.txt"],
    ["head -n 1 notes.txt > first.txt"],
    ["date +%s%N > now.txt"],  # nondeterministic: excluded
]


def small_night() -> NightSettings:
    replay = ReplaySettings(group_size=2, sandbox=BACKEND, command_timeout_s=5, executor=ONE_TURN)
    return NightSettings(
        cycle=CycleSettings(
            iterations=1, tasks_per_iteration=2, replay=replay,
            evaluation=as_served(replace(replay, seed=10_000)), train=TrainSettings(learning_rate=1e-3),
        ),
        harvest=HarvestSettings(heldout_fraction=0.5),
        distill=replace(NightSettings().distill, max_epochs=1),
        min_distill_examples=2,
    )  # fmt: skip


@pytest.mark.slow
def test_a_night_turns_the_day_into_tasks_gates_on_two_sets_and_stores_competence(tmp_path: Path) -> None:
    store = MemoryStore.open(tmp_path / "memory.db")
    for commands in COMMANDS:
        asyncio.run(record_episode(store, tmp_path, commands, query=f"please run {commands[0]}"))
    model_dir = build_tiny_model(tmp_path / "tiny", seed=0)
    versions = ExecutorVersions(tmp_path / "data")
    regression = [t for t in synthetic_suite(seed=0, per_family=1) if t.split == "heldout"][:3]
    phases: list[str] = []

    night = asyncio.run(
        run_night(
            model_dir, store, tmp_path / "cycle", versions, small_night(),
            since=0, snapshot_dir=tmp_path / "snapshots", regression=regression, on_phase=phases.append,
        )
    )  # fmt: skip

    harvest = night.harvest
    assert harvest.considered == 5 and len(harvest.tasks) == 4
    assert [reason for _, reason in harvest.excluded] == ["nondeterministic"]
    assert {task.split for task in harvest.tasks} == {"train", "heldout"}
    # The planner's successful episodes were imitated before GRPO: the distilled adapter exists.
    assert night.distilled >= 4 and (tmp_path / "cycle" / "distilled" / "adapter_config.json").is_file()
    assert phases[:3] == ["collect", "distill", "train"] and "gate" in phases and phases[-1] == "measure"
    cycle = night.cycle
    # The user's held-out episode tasks are the gate's first set; the regression suite its second.
    heldout_ids = {task.id for task in harvest.tasks if task.split == "heldout"}
    assert {r.task for r in cycle.current.results} == heldout_ids
    assert cycle.regression_current is not None and cycle.regression_candidate is not None
    assert {r.task for r in cycle.regression_candidate.results} == {t.id for t in regression}
    assert cycle.decision.regression is not None and cycle.decision.regression.tasks == 3
    # Competence per kind of the version in service, under the name routing looks up, on the
    # user's held-out tasks only (the regression suite is the gate's, not the user's).
    serving = cycle.version.name if cycle.version else BASE_VERSION
    assert night.serving == serving
    kinds = TaskKinds(store)
    for task in (t for t in harvest.tasks if t.split == "heldout"):
        measured = store.routing.competence(serving, kinds.kind_of(task.instruction))
        assert measured is not None and 0.0 <= measured.success <= 1.0 and measured.source == "gate"
    assert set(night.competence) == {
        kinds.kind_of(t.instruction) for t in harvest.tasks if t.split == "heldout"
    }
    for task in regression:
        assert store.routing.competence(serving, kinds.kind_of(task.instruction)) is None


@pytest.mark.slow
def test_the_users_held_out_set_keeps_earlier_nights_tasks(tmp_path: Path) -> None:
    store = MemoryStore.open(tmp_path / "memory.db")
    model_dir = build_tiny_model(tmp_path / "tiny", seed=0)
    versions = ExecutorVersions(tmp_path / "data")
    regression = [t for t in synthetic_suite(seed=0, per_family=1) if t.split == "heldout"][:2]
    nights = tmp_path / "cycles"

    async def night(number: int, commands: list[list[str]], since: float):  # type: ignore[no-untyped-def]
        for command in commands:
            await record_episode(store, tmp_path, command, query=f"night {number}: {command[0]}")
        return await run_night(
            model_dir, store, nights / f"n{number}", versions, small_night(),
            since=since, snapshot_dir=tmp_path / "snapshots", regression=regression,
        )  # fmt: skip

    first = asyncio.run(night(1, COMMANDS[:2], 0))
    held_first = {t.id for t in first.harvest.tasks if t.split == "heldout"}
    second = asyncio.run(night(2, COMMANDS[2:4], time.time()))
    held_second = {t.id for t in second.harvest.tasks if t.split == "heldout"}
    assert len(held_first) == len(held_second) == 1 and held_first != held_second
    # Tonight's held-out task and last night's: the gate's user set, never trained on.
    assert {r.task for r in second.cycle.current.results} == held_first | held_second
    assert json.loads((nights / "heldout_episodes.json").read_text()) == sorted(
        int(i.removeprefix("ep")) for i in held_first | held_second
    )
