"""Warm start: supervised fine-tuning on reference solutions until held-out success stops rising.

A first executor cannot learn from its own attempts while it never succeeds (GRPO needs groups
whose rewards differ). So it first imitates: each training task's reference solution rendered as
the one JSON action that solves it (runtime/executor/actions.py), the loss on those tokens only
(learner/sft.py). After every epoch the model is evaluated on held-out tasks through the real
executor path, and training stops after `patience` epochs without a new best (patience None:
it trains every epoch, for a learning rate that decays to the last) and keeps the best epoch's
weights: the curve is part of the result, so a gain measured later is what reinforcement
learning adds on top. Pass validation tasks here, not the tasks that will measure that gain:
the best point of a noisy curve overstates what it was measured on (connectors/quickstart/run.py
splits them).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from learner.evaluation import evaluate
from learner.policy import TrainablePolicy
from learner.replay import ReplaySettings
from learner.sft import EpochReport, SFTExample, SFTSettings, sft
from learner.tasks import Task
from memory import MemoryStore
from runtime.executor import LocalBackend, LocalModel
from runtime.executor import prompts as executor_prompts


@dataclass(frozen=True)
class WarmStartSettings:
    sft: SFTSettings = field(default_factory=lambda: SFTSettings(max_epochs=30, learning_rate=3e-3))
    # Epochs without a new best before stopping; None: train every epoch (a decaying learning
    # rate does its best work in the last epochs) and keep the best one.
    patience: int | None = 3
    min_epochs: int = 10  # before this, a flat curve (often all zeros early on) stops nothing
    # ... and nor does a curve that never left zero: there is nothing to stop improving yet
    # (max_epochs and the deadline still bound it).
    evaluation: ReplaySettings = field(default_factory=ReplaySettings)
    deadline: float | None = None  # time.time() after which no new epoch starts


@dataclass
class WarmStart:
    model_dir: Path  # the warm-started model, a full model directory
    curve: list[tuple[int, float, float]]  # (epoch, held-out success, train loss)
    best_epoch: int
    best_success: float


def solving_action(task: Task) -> str:
    """The reference solution as one executor action that runs it and ends the task."""
    commands = [{"keystrokes": command + "\n", "timeout": 10} for command in task.reference]
    return json.dumps(
        {"analysis": "Run the commands that do the task.", "commands": commands, "task_complete": True}
    )


def examples(tasks: Sequence[Task]) -> list[SFTExample]:
    return [
        SFTExample(
            [
                {"role": "system", "content": executor_prompts.SYSTEM},
                {"role": "user", "content": task.instruction},
            ],
            solving_action(task),
        )
        for task in tasks
        if task.reference
    ]


def should_stop(settings: WarmStartSettings, epoch: int, best_success: float, stale: int) -> bool:
    """After `epoch`, with the best held-out success so far and `stale` epochs since it rose:
    past the deadline, or (with patience) `patience` stale epochs once the curve has left zero
    and `min_epochs` are done."""
    if settings.deadline is not None and time.time() > settings.deadline:
        return True
    if settings.patience is None:
        return False
    return best_success > 0 and epoch >= settings.min_epochs and stale >= settings.patience


async def warm_start(
    base: LocalModel,
    train: Sequence[Task],
    heldout: Sequence[Task],
    store: MemoryStore,
    work_dir: Path,
    settings: WarmStartSettings,
    on_epoch: Callable[[int, float, float], None] | None = None,
) -> WarmStart:
    """SFT in a worker thread; after each epoch, held-out evaluation on the event loop."""
    loop = asyncio.get_running_loop()
    curve: list[tuple[int, float, float]] = []
    best_dir = work_dir / "warm-best"
    best = {"success": -1.0, "epoch": 0, "stale": 0}

    def after_epoch(report: EpochReport, policy: TrainablePolicy) -> bool:
        future = asyncio.run_coroutine_threadsafe(
            evaluate(
                heldout,
                LocalBackend(policy.sampler),
                store,
                work_dir / "snapshots",
                settings.evaluation,
                f"warm{report.epoch}",
            ),
            loop,
        )
        success = future.result().success
        curve.append((report.epoch, success, report.loss))
        if on_epoch is not None:
            on_epoch(report.epoch, success, report.loss)
        # A tie keeps the later (better imitated) weights but does not count as progress.
        improved = success > best["success"]
        if success >= best["success"]:
            best.update(success=success, epoch=report.epoch)
            policy.save_model(best_dir)  # the weights at their best so far
        best["stale"] = 0 if improved else best["stale"] + 1
        return should_stop(settings, report.epoch, float(best["success"]), int(best["stale"]))

    await asyncio.to_thread(sft, base, examples(train), settings.sft, on_epoch=after_epoch)
    return WarmStart(best_dir, curve, int(best["epoch"]), float(best["success"]))
