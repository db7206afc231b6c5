"""What the quickstart does, fixed in work, and how long that should take on this machine.

Work, not wall-clock time, decides the run: a warm start of `warm_max_epochs` epochs (or
fewer, by the validation rule, where `warm_patience` is set), then exactly `grpo_steps` GRPO
steps. Every machine does the same work and so reaches the same result, up to sampling noise; a
slow machine takes longer instead of learning less. `--minutes` is only a safety cap, and the
run says when it cut the plan short.

The estimate comes from a calibration at the start: the untrained executor's evaluation gives
the cost of one attempt (sampled, run in the sandbox, verified; attempts run concurrently, so
this is the wall time per attempt as the run will see it), reference solutions run together in
the sandbox give its part of that cost, and one supervised step on a copy of the model gives the
cost of an optimizer step. The untrained executor's replies run to the token limit, a trained
one's are about as long as the reference actions it imitates: the sampling part is scaled by
that ratio of reply lengths (an attempt costs far less once the executor is trained, and taking
the untrained cost made the estimate half again too long). The live ETA then corrects it with
the speed actually measured (progress.py).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

EXAMPLES_PER_STEP = 16  # the warm start's and the GRPO update's examples per optimizer step
# Threads a training stretch uses (learner/threads.py): this process's cores, up to this many.
# Two make the tiny executor's training ~1.7x faster on an idle 2-core machine; more than four
# were never measured, and a model this small has little work to split.
MAX_TRAINING_THREADS = 4


def training_threads() -> int:
    """Threads for the warm start's epochs and GRPO's updates: nothing samples or runs a
    sandbox while they train, so they may use every core this process is allowed."""
    return max(1, min(MAX_TRAINING_THREADS, len(os.sched_getaffinity(0))))


@dataclass(frozen=True)
class QuickstartPlan:
    imitated_per_family: int = 32  # training tasks the warm start imitates, per family
    train_per_family: int = 64  # training tasks GRPO replays (the imitated ones and as many new)
    heldout_per_family: int = 16  # held-out tasks per family, every other one to validation/test
    warm_max_epochs: int = 24
    warm_min_epochs: int = 12
    # None: the warm start trains all warm_max_epochs (its learning rate decays along a cosine
    # to the last, where it learns most) and keeps the epoch of best validation success.
    warm_patience: int | None = None
    grpo_steps: int = 100
    tasks_per_step: int = 16
    group_size: int = 8
    updates_per_batch: int = 2
    eval_group: int = 4  # attempts per test task, for the gate
    # Tasks replayed at once (all their attempts together): the whole step's, so the sampler
    # batches every attempt's call and the sandboxes' processes use the second core meanwhile.
    concurrent_tasks: int = 16
    # GRPO steps between two probes: validation tasks (which choose the candidate) and test
    # tasks (the curve), `probe_group` attempts each; the last step is probed too.
    probe_every: int = 10
    probe_group: int = 2
    # After each GRPO step, a supervised step on the references of the tasks whose attempts all
    # failed (learner/guidance.py; `--guidance`). Off: on five fresh seeds (65-69) it gained
    # +20.4 points on average, GRPO alone +19.6 on seeds 60-64 (docs/learner.md).
    guidance: bool = False

    @classmethod
    def quick(cls) -> QuickstartPlan:
        """The same path, small: tests and smoke checks."""
        return cls(
            imitated_per_family=4, train_per_family=8, heldout_per_family=4, warm_max_epochs=2,
            warm_min_epochs=1, warm_patience=1, grpo_steps=2, tasks_per_step=4, group_size=4,
            eval_group=2, probe_every=1, probe_group=1,
        )  # fmt: skip

    def probes(self) -> int:
        """Probes while training: every `probe_every` steps, and after the last step."""
        if self.probe_every <= 0 or self.grpo_steps <= 0:
            return 0
        return self.grpo_steps // self.probe_every + (self.grpo_steps % self.probe_every != 0)


@dataclass(frozen=True)
class Calibration:
    attempt_s: float  # wall seconds per untrained attempt, as attempts run concurrently
    step_s: float  # seconds per optimizer step of EXAMPLES_PER_STEP examples
    sandbox_s: float = 0.0  # of attempt_s: the sandbox's part (start, command, verifier)
    reply_tokens: float = 1.0  # tokens per reply the untrained executor wrote
    trained_reply_tokens: float = 1.0  # tokens per reference action (what a trained one writes)

    @property
    def trained_attempt_s(self) -> float:
        """An attempt's wall seconds once the executor writes replies of the reference actions'
        length: the sandbox's part, and the sampling part scaled by the reply lengths' ratio."""
        sandbox = min(self.sandbox_s, self.attempt_s)
        shorter = min(1.0, self.trained_reply_tokens / max(1.0, self.reply_tokens))
        return sandbox + (self.attempt_s - sandbox) * shorter


@dataclass(frozen=True)
class Estimate:
    """Seconds each part of the plan should take, on the calibrated machine."""

    warm_epoch_s: float
    grpo_step_s: float
    probe_s: float
    gate_s: float
    warm_epochs: tuple[int, int]  # (fewest, most) epochs the validation rule may run
    grpo_steps: int
    probes: int

    def total_s(self, warm_epochs: int | None = None) -> float:
        epochs = self.warm_epochs[1] if warm_epochs is None else warm_epochs
        return (
            epochs * self.warm_epoch_s
            + self.grpo_steps * self.grpo_step_s
            + self.probes * self.probe_s
            + self.gate_s
        )

    def line(self) -> str:
        fewest, most = self.warm_epochs
        shortest, longest = _duration(self.total_s(fewest)), _duration(self.total_s(most))
        span = longest if shortest == longest else f"{shortest} to {longest}"
        epochs = str(most) if fewest == most else f"{fewest}-{most}"
        return (
            f"estimated time on this machine: {span} "
            f"(warm start {epochs} epochs of ~{self.warm_epoch_s:.0f} s, "
            f"{self.grpo_steps} GRPO steps of ~{self.grpo_step_s:.0f} s, "
            f"{self.probes} held-out probes and the gate ~{_duration(self.probes * self.probe_s + self.gate_s)})"
        )


def estimate(
    plan: QuickstartPlan, calibration: Calibration, *, imitation_examples: int, validation: int, test: int
) -> Estimate:
    """The plan's cost from the calibration; task counts as the run built them."""
    attempt, step = calibration.trained_attempt_s, calibration.step_s
    warm_epoch = math.ceil(imitation_examples / EXAMPLES_PER_STEP) * step + validation * 2 * attempt
    rollouts = plan.tasks_per_step * plan.group_size
    # A GRPO update reads each row's logprobs and trains on it: about one supervised step's cost
    # per EXAMPLES_PER_STEP rows and update.
    grpo_step = rollouts * attempt + plan.updates_per_batch * math.ceil(rollouts / EXAMPLES_PER_STEP) * step
    probe = (validation + test) * plan.probe_group * attempt
    fewest = (
        plan.warm_max_epochs
        if plan.warm_patience is None
        else min(plan.warm_min_epochs, plan.warm_max_epochs)
    )
    return Estimate(
        warm_epoch,
        grpo_step,
        probe,
        2 * test * plan.eval_group * attempt,
        (fewest, plan.warm_max_epochs),
        plan.grpo_steps,
        plan.probes(),
    )


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"
