"""The week bench's user: what they ask for each day, and how they react to each reply.

    user = SimulatedUser(seed=0)
    for task in user.requests(day=1, count=24):     # fresh instances every day
        ...                                          # the agent works in a workspace holding task.files
        good = await user.react(task, sandbox)       # the family's verifier on the resulting workspace

Habits: the user's requests are drawn, by weight, from a profile of the synthetic task families
(learner/tasks): mostly the easy file and text chores, now and then a rarer, harder one. Each
day's instances are new (their seed is the user's seed and the day), so the executor never sees
the same task twice, as with real traffic. The verifier is the user's judgement: the agent never
sees it; the user's thumbs up or down is all it gets, as users give it.
"""

from __future__ import annotations

import random
from collections import Counter

from learner.tasks import Task, synthetic_suite, verify
from runtime.sandbox import Sandbox

# family -> relative weight: easy chores most days, a few rare ones (difficulty 2 and 3).
HABITS: dict[str, float] = {
    "create_file": 4.0,
    "append_line": 3.0,
    "copy_file": 3.0,
    "count_lines": 3.0,
    "rename_file": 2.0,
    "sort_lines": 2.0,
    "head_lines": 2.0,
    "count_words": 2.0,
    "move_into_dir": 1.5,
    "sort_append": 1.0,
    "grep_lines": 0.5,
    "replace_word": 0.4,
    "sum_numbers": 0.3,
    "count_unique": 0.2,
}


class SimulatedUser:
    def __init__(self, seed: int, habits: dict[str, float] | None = None) -> None:
        self.seed = seed
        self.habits = dict(HABITS if habits is None else habits)

    def requests(self, day: int, count: int) -> list[Task]:
        """The day's `count` requests, in the order the user sends them."""
        rng = random.Random(f"week-user/{self.seed}/{day}")
        families = rng.choices(list(self.habits), weights=list(self.habits.values()), k=count)
        wanted = Counter(families)
        # A family's instances depend on the seed alone (synthetic.py): a new seed each day.
        day_seed = self.seed * 1_000 + day
        instances = {
            family: synthetic_suite(day_seed, per_family=n, families=[family], heldout_families=())
            for family, n in wanted.items()
        }
        return [instances[family].pop(0) for family in families]

    async def react(self, task: Task, sandbox: Sandbox) -> bool:
        """Thumbs up when the workspace now passes the task's verifier, else thumbs down."""
        return await verify(task, sandbox)
