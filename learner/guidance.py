"""Reference guidance: a supervised step on the reference solutions of the tasks that GRPO
could not learn from.

    guidance = Guidance(trainer.policy, GuidanceSettings(), learning_rate=2e-3)
    guided = guidance.step(batch, attempts)   # after the GRPO step on the same replays

GRPO learns only from groups whose attempts differ. A task whose every attempt failed gives
no gradient, however often it is drawn, and a tiny executor fails some tasks every time: it
writes a name it has seen often instead of the one the task gives ("cp log.txt draft.txt" for
"Copy the file input.txt to draft.txt", eight attempts of eight). Where such a task has a
reference solution (the task suites' tasks do; the day's episodes usually do not), the policy
takes one supervised step on it, the reference rendered as the executor's action exactly as
the warm start imitates it (learner/warmstart.py), so the next replays of that task, and of
tasks like it, have a success to reinforce. This is imitation only where reinforcement has
nothing to work with; a group with any success is left to GRPO alone.

The step trains the same adapter GRPO trains, with an optimizer of its own (its moments are
not GRPO's, and are not checkpointed: a resumed cycle starts them again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from learner.policy import TrainablePolicy
from learner.replay import Attempt
from learner.sft import SFTSettings, target_rows, train_step
from learner.tasks import Task
from learner.threads import training_threads
from learner.warmstart import examples


@dataclass(frozen=True)
class GuidanceSettings:
    max_examples: int = 16  # references imitated in one step (the step's failed tasks, in order)
    max_row_tokens: int = 2048


class Guidance:
    def __init__(
        self,
        policy: TrainablePolicy,
        settings: GuidanceSettings,
        *,
        learning_rate: float,
        max_grad_norm: float = 1.0,
        threads: int | None = None,
    ) -> None:
        if policy.tokenizer is None:
            raise ValueError("guidance encodes chats: the policy needs its tokenizer")
        self.policy = policy
        self.settings = settings
        self.threads = threads
        self._sft = SFTSettings(
            learning_rate=learning_rate, max_row_tokens=settings.max_row_tokens, max_grad_norm=max_grad_norm
        )
        self.optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=learning_rate, weight_decay=0.0)

    def step(self, tasks: Sequence[Task], attempts: Sequence[Attempt]) -> int:
        """One supervised step on the references of `tasks` none of whose `attempts` succeeded;
        returns how many references it trained on (0: no step)."""
        failed = unsolved(tasks, attempts)[: self.settings.max_examples]
        assert self.policy.tokenizer is not None
        rows = target_rows(self.policy.tokenizer, examples(failed), self.settings.max_row_tokens)
        if not rows:
            return 0
        with training_threads(self.threads):
            train_step(self.policy, self.optimizer, rows, self._sft)
        return len(rows)


def unsolved(tasks: Sequence[Task], attempts: Sequence[Attempt]) -> list[Task]:
    """The tasks with a reference that were attempted and never succeeded, in `tasks` order."""
    best: dict[str, float] = {}
    for attempt in attempts:
        best[attempt.task_id] = max(best.get(attempt.task_id, 0.0), attempt.reward)
    return [task for task in tasks if task.reference and task.id in best and best[task.id] <= 0.0]
