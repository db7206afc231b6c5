"""Warm start: SFT on reference solutions, held-out success measured after every epoch through
the real executor path, stopped by patience or by the deadline, the best epoch's weights kept."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from learner.replay import ReplaySettings
from learner.sft import SFTSettings
from learner.tasks import synthetic_suite
from learner.warmstart import WarmStartSettings, examples, should_stop, solving_action, warm_start
from memory import MemoryStore
from runtime.executor import LocalModel, SamplingParams, build_tiny_model
from runtime.executor.actions import parse_action
from runtime.executor.loop import ExecutorSettings

pytestmark = pytest.mark.anyio
ONE_TURN = ExecutorSettings(max_turns=1, sampling=SamplingParams(temperature=1.0, max_tokens=48))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> LocalModel:
    return LocalModel.load(build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0))


def settings(**changes: object) -> WarmStartSettings:
    base = dict(
        sft=SFTSettings(max_epochs=6, learning_rate=3e-3, examples_per_step=8),
        patience=1,
        min_epochs=1,
        evaluation=ReplaySettings(group_size=1, executor=ONE_TURN),
    )
    return WarmStartSettings(**{**base, **changes})  # type: ignore[arg-type]


def test_the_reference_becomes_one_action_that_runs_it_and_ends_the_task() -> None:
    task = synthetic_suite(0, 1, families=["uppercase_append"])[0]
    action = parse_action(solving_action(task))
    assert [c.keystrokes for c in action.commands] == list(task.reference) and action.task_complete
    [example] = examples([task])
    assert example.messages[-1] == {"role": "user", "content": task.instruction}


async def test_a_curve_that_never_left_zero_stops_nothing_and_the_last_epoch_is_kept(
    local: LocalModel, tmp_path: Path
) -> None:
    train = synthetic_suite(0, 2, families=["count_lines", "sort_lines"], heldout_families=[])
    heldout = synthetic_suite(0, 1, families=["count_words"])
    with MemoryStore.open(tmp_path / "m.db") as store:
        seen: list[tuple[int, float, float]] = []
        warm = await warm_start(
            local, train, heldout, store, tmp_path, settings(sft=SFTSettings(max_epochs=3, learning_rate=3e-3, examples_per_step=8)),
            on_epoch=lambda *a: seen.append(a),
        )  # fmt: skip
    # Random weights, a few epochs on four examples: held-out success stays at 0. Patience (1)
    # would stop after epoch 2, but a curve that never rose has nothing to stop improving.
    assert [epoch for epoch, _, _ in warm.curve] == [1, 2, 3] and warm.curve == seen
    assert warm.best_success == 0.0 and warm.best_epoch == 3  # a tie keeps the later weights
    assert (warm.model_dir / "config.json").exists() and LocalModel.load(warm.model_dir)


async def test_the_deadline_stops_the_warm_start_after_the_epoch_running(
    local: LocalModel, tmp_path: Path
) -> None:
    train = synthetic_suite(0, 2, families=["count_lines"], heldout_families=[])
    heldout = synthetic_suite(0, 1, families=["count_words"])
    with MemoryStore.open(tmp_path / "m.db") as store:
        warm = await warm_start(
            local,
            train,
            heldout,
            store,
            tmp_path,
            settings(patience=10, min_epochs=10, deadline=time.time() - 1),
        )
    assert [epoch for epoch, _, _ in warm.curve] == [1]


def test_patience_stops_a_risen_curve_and_none_trains_every_epoch() -> None:
    patient = settings(patience=4, min_epochs=12)
    assert should_stop(patient, epoch=19, best_success=0.23, stale=4)  # seed 67's warm start stopped here
    assert not should_stop(patient, epoch=19, best_success=0.23, stale=3)
    assert not should_stop(patient, epoch=11, best_success=0.23, stale=4)  # before min_epochs
    assert not should_stop(patient, epoch=19, best_success=0.0, stale=19)  # never left zero
    every_epoch = settings(patience=None, min_epochs=12)
    assert not any(
        should_stop(every_epoch, epoch, 0.5, stale) for epoch in range(1, 25) for stale in range(25)
    )
    assert should_stop(settings(patience=None, deadline=time.time() - 1), epoch=1, best_success=0.0, stale=0)
