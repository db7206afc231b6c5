"""Which training tasks an iteration replays: uniformly, or weighted by how much they can teach.

    sampler = TaskSampler(tasks, "learnability", random.Random(seed))
    batch = sampler.draw(16)                      # distinct tasks
    sampler.record(attempts)                      # after the replay: (task id, reward) pairs

GRPO learns only from groups whose attempts differ: a task the policy always solves (or never
solves) gives a group with no reward variance, which is dropped, and its replay time is spent
for nothing. "learnability" weights each task by p(1 - p), the variance of a success with
probability p, where p is the task's estimated success rate:

    family rate  q = (family successes + 1) / (family attempts + 2)
    task rate    p = (task successes + 2q) / (task attempts + 2)

A task's own replays count most once it has some; until then its family speaks for it, so a
pool of hundreds of tasks, each replayed rarely, still leans towards the families the policy
has not mastered. A task of a family never replayed weighs 0.25, the most any task can; in a
family solved 95% of the time, a task not yet replayed weighs about 0.05, and one solved 8 of 8
times about 0.01. No weight reaches zero, so mastered (or hopeless) tasks are still visited now
and then. "uniform" draws like `random.sample`.

`source_weights` multiplies a task's weight by the weight of its source (the part of
`Task.source` before the first ":", e.g. "episode", "tbench", "synthetic"; 1.0 when not named):
a night draws the day's episode tasks more often than imported ones, and those more often than
the synthetic suite, which stays in the pool as a regression set. Under "uniform" the weights
are the source weights alone.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from learner.tasks import Task

TaskSampling = Literal["uniform", "learnability"]


@dataclass
class _Tally:
    attempts: int = 0
    successes: float = 0.0

    def rate(self, prior: float, strength: float) -> float:
        return (self.successes + strength * prior) / (self.attempts + strength)


class TaskSampler:
    def __init__(
        self,
        tasks: Sequence[Task],
        how: TaskSampling,
        rng: random.Random,
        *,
        source_weights: Mapping[str, float] | None = None,
    ) -> None:
        if how not in ("uniform", "learnability"):
            raise ValueError(f"task sampling must be 'uniform' or 'learnability', not {how!r}")
        weights = dict(source_weights or {})
        if any(weight <= 0 for weight in weights.values()):
            raise ValueError(f"source weights must be positive: {weights}")
        self.tasks = list(tasks)
        self._source_weight = {task.id: weights.get(task.source.split(":", 1)[0], 1.0) for task in self.tasks}
        self.how = how
        self._rng = rng
        self._family_of = {task.id: task.family for task in self.tasks}
        self._tasks = {task.id: _Tally() for task in self.tasks}
        self._families = {task.family: _Tally() for task in self.tasks}

    def success_rate(self, task_id: str) -> float:
        family = self._families[self._family_of[task_id]].rate(0.5, 2.0)
        return self._tasks[task_id].rate(family, 2.0)

    def weight(self, task_id: str) -> float:
        if self.how == "uniform":
            return self._source_weight[task_id]
        p = self.success_rate(task_id)
        return p * (1.0 - p) * self._source_weight[task_id]

    def draw(self, count: int) -> list[Task]:
        """`count` distinct tasks (all of them when there are fewer)."""
        count = min(count, len(self.tasks))
        if self.how == "uniform" and len(set(self._source_weight.values())) <= 1:
            return self._rng.sample(self.tasks, count)
        # Weighted sampling without replacement (Efraimidis-Spirakis): the `count` largest keys
        # u ** (1 / weight), u uniform in (0, 1).
        keys = [(self._rng.random() ** (1.0 / self.weight(task.id)), i) for i, task in enumerate(self.tasks)]
        return [self.tasks[i] for _, i in sorted(keys, reverse=True)[:count]]

    def record(self, results: Iterable[tuple[str, float]]) -> None:
        """(task id, reward) for each attempt replayed, rewards clamped to [0, 1]; unknown task
        ids are ignored."""
        for task_id, reward in results:
            if task_id not in self._tasks:
                continue
            success = min(max(reward, 0.0), 1.0)
            for tally in (self._tasks[task_id], self._families[self._family_of[task_id]]):
                tally.attempts += 1
                tally.successes += success
