"""A whole learning cycle across processes: rank 0 runs the night (replays, gate, promotion) and
the other ranks follow its training steps, each taking its share of every batch.

    # rank 0, in run_cycle (CycleSettings.followers set):
    followers = Followers(parallel)
    followers.start(TrainerSpec(...))       # the other ranks load the model and build their trainer
    metrics = followers.step(trainer, rows) # every rank trains on its shard; the gradients are summed
    followers.release()                     # the other ranks leave (also when the cycle stops early)

    # every other rank (connectors/nightly/ranks.py under `accelerate launch`):
    follow(parallel)

Why only the training is shared: the update is what data parallelism speeds up and what FSDP
would shard; the replays are sampled where the executor's weights serve (here, a Ray cluster
with `[learner] ray_address`, or the executor's server), and the gate and promotion are one
decision. A rank waits for rank 0's next message (a spec, a batch of rows, or None: leave) in a
broadcast, so rank 0's replays between steps only keep the others waiting. The weights stay
equal on every rank (learner/data_parallel.py), so rank 0's trained adapter is the run's.

When rank 0 stops between steps (done, cancelled, a failed replay) `release` lets the others
leave cleanly. When it fails inside a step, the others are inside the step's all-reduce: rank 0
sends nothing more, its process exits with the error, and the launcher (torchrun) ends the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from learner.data_parallel import DataParallel
from learner.rows import RowBatch
from learner.train import GRPOTrainer, StepMetrics, TrainSettings


@dataclass(frozen=True)
class TrainerSpec:
    """What a following rank needs to build the trainer rank 0 built: the model as the cycle
    loads it (on the rank's own device), the training settings, the cycle's checkpoints (a
    resumed cycle resumes on every rank) and the adapter training starts from."""

    model_dir: Path
    train: TrainSettings
    checkpoint_dir: Path
    start_adapter: Path | None
    dtype: str | None
    attn_implementation: str | None
    torch_threads: int | None


class Followers:
    """Rank 0's side: what it tells the other ranks, in the order they expect it."""

    def __init__(self, parallel: DataParallel) -> None:
        if not parallel.is_main:
            raise ValueError("Followers is rank 0's side; the other ranks call follow()")
        self.parallel = parallel
        self._state = "waiting"  # waiting (for a spec) | training | stepping | released

    @property
    def released(self) -> bool:
        """The other ranks were told to leave."""
        return self._state == "released"

    def start(self, spec: TrainerSpec) -> None:
        """Send the spec; the caller builds its own trainer next (its construction broadcasts the
        trainable weights, which the other ranks' constructions receive). Once per run."""
        if self._state != "waiting":
            raise RuntimeError(f"the other ranks train one cycle a run; they are {self._state}")
        self.parallel.broadcast(spec)
        self._state = "training"

    def step(self, trainer: GRPOTrainer, rows: RowBatch) -> StepMetrics:
        """One training step on `rows`, taken by every rank on its shard."""
        if self._state != "training":
            raise RuntimeError(f"a step needs the other ranks ready to train; they are {self._state}")
        self.parallel.broadcast(rows)
        self._state = "stepping"
        metrics = trainer.step(rows)
        self._state = "training"
        return metrics

    def release(self) -> None:
        """Let the other ranks leave: before, between or after the steps. Inside a failed step it
        sends nothing (they are in the step's collectives; the launcher ends them)."""
        if self._state in ("waiting", "training"):
            self.parallel.broadcast(None)
            self._state = "released"


def follow(parallel: DataParallel, say: Callable[[str], object] = print) -> int:
    """A following rank's whole part of the cycle: build the trainer rank 0 describes, then take
    each batch's shard until rank 0 says to leave. Returns the steps taken."""
    from runtime.executor import LocalModel

    spec: TrainerSpec | None = parallel.broadcast(None)
    if spec is None:  # the cycle ended before training (nothing to train, a setup error)
        return 0
    model = LocalModel.load(
        spec.model_dir,
        device=str(parallel.device),
        dtype=spec.dtype,
        threads=spec.torch_threads,
        attn_implementation=spec.attn_implementation,
    )
    trainer = GRPOTrainer(
        model, spec.train, spec.checkpoint_dir, start_adapter=spec.start_adapter, parallel=parallel
    )
    steps = 0
    while True:
        rows: RowBatch | None = parallel.broadcast(None)
        if rows is None:
            break
        trainer.step(rows)
        steps += 1
    say(f"rank {parallel.rank}: trained {steps} step(s) on its share of each batch")
    return steps
