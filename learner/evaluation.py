"""Held-out success of an executor: replay frozen tasks with fixed seeds and read the verdicts.

The same tasks and seeds for every executor evaluated in a run, so results pair up by
(task, seed) for the gate (learner/gate.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from learner.gate import HeldoutResult
from learner.replay import ReplaySettings, replay
from learner.tasks import Task
from memory import MemoryStore
from runtime.executor import ExecutorBackend


@dataclass(frozen=True)
class Evaluation:
    results: list[HeldoutResult]

    @property
    def success(self) -> float:
        return sum(r.reward for r in self.results) / len(self.results) if self.results else 0.0

    @property
    def parse_failures(self) -> int:
        return sum(r.parse_failures for r in self.results)


async def evaluate(
    tasks: Sequence[Task],
    backend: ExecutorBackend,
    store: MemoryStore,
    snapshot_dir: Path,
    settings: ReplaySettings,
    label: str,
) -> Evaluation:
    attempts = await replay(tasks, backend, store, snapshot_dir, settings, label)
    return Evaluation(
        [HeldoutResult(a.task_id, a.index, a.reward, a.parse_failures, a.timeouts) for a in attempts]
    )
