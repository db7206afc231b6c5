"""Data-parallel GRPO steps across processes (accelerate's launcher, torch.distributed): each rank
trains on a shard of the batch's micro-batches, and the gradients are summed across ranks before
the optimizer step.

    parallel = DataParallel.from_accelerate()                  # under `accelerate launch`
    trainer = GRPOTrainer(model, settings, checkpoints, parallel=parallel)
    trainer.step(batch)         # every rank the same batch (`broadcast` it from rank 0)

Why the result is the one-process step's: a micro-batch's loss is already normalised for the
whole batch (learner/micro_batch.py, `RowBatch.denominator`), so the batch gradient is the sum
of the micro-batches' gradients, whichever process computed them. Rank r computes packs r,
r + world, r + 2 world, ...; the trainable gradients are all-reduced (summed) once per update,
and every rank clips and steps the same gradient from the same state (the trainable weights are
broadcast from rank 0 when the trainer starts), so the weights stay equal on every rank without
being sent again, and equal the one-process run's up to the order of float additions. The step's
metric sums are summed the same way.

This is DDP's arithmetic without its wrapper: DDP averages where the normalised loss wants a sum,
and hangs when ranks run different numbers of backward passes (a batch of three packs on two
ranks); here a rank with fewer packs, or none, joins the one all-reduce per update with what it
has. What goes over the wire is the trainable gradient only: for a LoRA adapter a few MB.

With `fsdp` set (base weights that do not fit one GPU), the trainer also shards the base
model's decoder layers across the ranks (learner/fsdp.py: FSDP2); the adapter stays whole on
every rank and trains by the arithmetic above, and every rank runs the same number of
micro-batches (an idle, zero-weight one where the shard is short), as FSDP's collectives need.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

T = TypeVar("T")


@dataclass(frozen=True)
class DataParallel:
    """This process's place among `world_size` ranks; `device` is the one its weights live on."""

    rank: int
    world_size: int
    device: torch.device
    fsdp: bool = False  # the base model's decoder layers sharded across the ranks (learner/fsdp.py)

    @classmethod
    def from_accelerate(
        cls, *, cpu: bool = False, fsdp: bool = False, timeout_s: float | None = None
    ) -> DataParallel:
        """The ranks `accelerate launch` (or torchrun) started, their process group set up by
        accelerate (gloo on CPU, nccl on GPUs); in a plain process, one rank of one.
        `timeout_s`: how long a collective waits for the other ranks (torch's default: 30
        minutes on gloo, 10 on nccl), e.g. while rank 0 replays between steps."""
        from datetime import timedelta

        from accelerate import PartialState

        options = {} if timeout_s is None else {"timeout": timedelta(seconds=timeout_s)}
        state = PartialState(cpu=cpu, **options)
        return cls(state.process_index, state.num_processes, state.device, fsdp=fsdp)

    @property
    def is_main(self) -> bool:
        """Rank 0: the one that reads the rows, writes checkpoints and the adapter, and speaks."""
        return self.rank == 0

    def shard(self, items: Sequence[T]) -> list[T]:
        """This rank's share of `items`: every world_size-th, from its rank on."""
        return list(items[self.rank :: self.world_size])

    def broadcast(self, value: T) -> T:
        """Rank 0's `value` on every rank (a picklable object: the batch of rows)."""
        if self.world_size == 1:
            return value
        import torch.distributed as dist

        box: list[Any] = [value if self.is_main else None]
        dist.broadcast_object_list(box, src=0, device=self._wire_device)
        result: T = box[0]
        return result

    def broadcast_parameters(self, parameters: Sequence[torch.nn.Parameter]) -> None:
        """Rank 0's values of `parameters` on every rank (DDP does this when it wraps a model)."""
        if self.world_size == 1:
            return
        import torch.distributed as dist

        with torch.no_grad():
            for parameter in parameters:
                dist.broadcast(parameter.data, src=0)

    def sum_gradients(self, parameters: Sequence[torch.nn.Parameter]) -> None:
        """Replace each parameter's gradient by its sum over the ranks, in one all-reduce; a
        parameter this rank gave no gradient (no micro-batch here) adds zeros."""
        if self.world_size == 1:
            return
        import torch.distributed as dist

        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in parameters]
        flat = torch.cat([grad.reshape(-1).to(torch.float32) for grad in grads])  # (N,)
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        offset = 0
        for parameter, grad in zip(parameters, grads):
            count = grad.numel()
            parameter.grad = flat[offset : offset + count].view_as(grad).to(grad.dtype)
            offset += count

    def sum_fields(self, totals: T) -> T:
        """A dataclass of float sums (the step's metric totals) summed field by field over ranks."""
        if self.world_size == 1:
            return totals
        import torch.distributed as dist

        names = [field.name for field in dataclasses.fields(totals)]  # type: ignore[arg-type]
        values = torch.tensor([float(getattr(totals, name)) for name in names], dtype=torch.float64)
        values = values.to(self._wire_device)
        dist.all_reduce(values, op=dist.ReduceOp.SUM)
        return dataclasses.replace(totals, **dict(zip(names, values.tolist())))  # type: ignore[type-var]

    def gather(self, values: torch.Tensor) -> torch.Tensor:
        """Every rank's 1-D `values` (of any length) concatenated in rank order, on every rank:
        figures that are not sums (the mismatch's percentiles) need every token's value."""
        if self.world_size == 1:
            return values
        import torch.distributed as dist

        parts: list[Any] = [None] * self.world_size
        dist.all_gather_object(parts, values.cpu())
        return torch.cat(parts)

    def close(self) -> None:
        """Leave the process group (every rank, at the end of training). The ranks meet at a
        barrier first: a rank that tore its connections down while another was still finishing
        the last collective (rank 0's release, learner/followers.py) died of SIGABRT in gloo's
        teardown ("terminate called without an active exception"; one CI run in three)."""
        if self.world_size > 1:
            import torch.distributed as dist

            dist.barrier()
            dist.destroy_process_group()

    @property
    def _wire_device(self) -> torch.device:
        """Where tensors for a collective live: nccl takes only CUDA tensors, gloo CPU ones."""
        return self.device if self.device.type == "cuda" else torch.device("cpu")
