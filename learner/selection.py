"""The candidate chosen on validation: of the adapters probed while training, the one whose
success on held-out validation tasks was best, instead of whatever the last step left.

    kept = BestOnValidation(work_dir / "selected")
    kept.offer(steps, validation.success, trainer.policy)   # at each probe
    step = kept.restore(trainer.policy)                      # after training: the best back in

Why: at a small batch, GRPO's held-out success is not monotone in the steps. In the quickstart's
seed 42 every probe from step 10 to step 90 stood 14-28 points above the warm start, and the last
step fell back to it; another run fell to 0.01 at step 60. The tasks that choose must not be the
tasks that then measure: the maximum of a noisy curve overstates the point it picks, so the gate,
which compares on its own held-out tasks, stays an honest measure of the chosen adapter.

Invariants:
- Ties go to the later step, which trained longer on the same evidence.
- What is kept is the policy's trainable tensors (a LoRA adapter's: small), on disk only, so a
  cycle resumed in the same directory still knows its best and can restore it: the weights go
  to a file of their own step (`weights-000050.safetensors`), then `kept.json` names it, each
  written durably (learner/durable.py), then older weights files go. A crash at any point
  leaves a `kept.json` whose step and weights belong together.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from safetensors.torch import save_file

from learner.checkpoint import load_trainable_weights, trainable_weights
from learner.durable import publish, write_atomically

if TYPE_CHECKING:
    from learner.policy import TrainablePolicy

KEPT = "kept.json"
LEGACY_WEIGHTS = "weights.safetensors"  # what kept.json meant before it named its file


class BestOnValidation:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.step: int | None = None  # the kept adapter's step (None: none kept yet)
        self.success = float("-inf")
        self.history: list[tuple[int, float]] = []  # (step, validation success) of every offer
        self.weights = LEGACY_WEIGHTS  # the kept step's weights file, in `directory`
        kept = directory / KEPT
        if kept.is_file():  # a resumed cycle: the best of the probes before the interruption
            state = json.loads(kept.read_text())
            self.step, self.success = int(state["step"]), float(state["success"])
            self.history = [(int(step), float(success)) for step, success in state["history"]]
            self.weights = str(state.get("weights", LEGACY_WEIGHTS))

    def offer(self, step: int, success: float, policy: TrainablePolicy) -> bool:
        """Record `step`'s validation success; keep the policy's weights if it is the best so
        far (ties: this later step). Returns whether they were kept."""
        self.history.append((step, success))
        better = success >= self.success
        if better:
            self.step, self.success = step, success
            self.weights = f"weights-{step:06d}.safetensors"
            self.directory.mkdir(parents=True, exist_ok=True)
            partial = self.directory / f".partial-{self.weights}"
            save_file(trainable_weights(policy), str(partial))
            publish(partial, self.directory / self.weights)
        self._write_state()
        if better:  # only now that kept.json names the new file
            for stale in self.directory.glob("*weights*.safetensors"):
                if stale.name != self.weights:
                    stale.unlink()
        return better

    def restore(self, policy: TrainablePolicy) -> int | None:
        """Copy the kept weights back into `policy`; returns their step (None: nothing kept,
        the policy is left as it is). CheckpointError if `policy` has other trainable
        parameters than the one whose weights were kept."""
        if self.step is None:
            return None
        load_trainable_weights(self.directory / self.weights, policy)
        return self.step

    def _write_state(self) -> None:
        state = {"step": self.step, "success": self.success, "history": self.history, "weights": self.weights}
        self.directory.mkdir(parents=True, exist_ok=True)
        write_atomically(self.directory / KEPT, json.dumps(state))
