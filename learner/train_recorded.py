"""GRPO steps on episodes already recorded in a memory database, data-parallel across the
processes `accelerate launch` starts: the entry point for training on more GPUs than one.

    accelerate launch --multi_gpu --num_processes 4 -m learner.train_recorded \\
        --model MODEL_DIR --memory DATA_DIR/memory.db --output ADAPTER_DIR [--since UNIX_TIME]
    accelerate launch --multi_gpu --num_processes 2 -m learner.train_recorded --cpu ...  # CPU (gloo)
    accelerate launch --multi_gpu --num_processes 4 -m learner.train_recorded --fsdp ...  # FSDP
    python -m learner.train_recorded ...                                                  # one process

(`--multi_gpu` picks accelerate's torchrun launcher, which starts the processes; with `--cpu`
here the ranks train on the CPU over gloo. accelerate's own `--cpu` runs a single process.)

Rank 0 reads the training episodes (split "train", oldest first; secret-marked ones never leave
memory) and builds the rows (learner/rows.py); the batch is broadcast, and every rank takes its
shard of each step (learner/data_parallel.py), so the adapter written at the end equals the one
a single process trains on the same rows, up to the order of float additions. Rank 0 prints
each step's metrics line and writes the adapter (PEFT format) and, with --checkpoints, the
checkpoints (a run started again in the same directory resumes). Each rank loads the model on
its own device: accelerate's (cuda:<local rank> on GPUs) unless --device says otherwise.
With --fsdp, the base model's decoder layers are sharded across the ranks (learner/fsdp.py) and
each rank prints how much of the base weights it holds.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from learner.data_parallel import DataParallel


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m learner.train_recorded", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("--model", type=Path, required=True, help="the executor's model directory")
    parser.add_argument("--memory", type=Path, required=True, help="the memory database (memory.db)")
    parser.add_argument("--output", type=Path, required=True, help="where the adapter is written")
    parser.add_argument(
        "--since", type=float, default=None, help="episodes created at or after this Unix time"
    )
    parser.add_argument("--start-adapter", type=Path, default=None, help="a PEFT adapter to continue from")
    parser.add_argument("--checkpoints", type=Path, default=None, help="a checkpoint directory (resumed)")
    parser.add_argument("--steps", type=int, default=1, help="steps on the batch (each: --updates updates)")
    parser.add_argument("--updates", type=int, default=1, help="optimizer updates per step (GRPO's mu)")
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--lora-rank", type=int, default=8)
    parser.add_argument("--lora-alpha", type=float, default=16.0)
    parser.add_argument("--token-budget", type=int, default=8192, help="positions per micro-batch")
    parser.add_argument("--max-row-tokens", type=int, default=2048, help="longer calls are not trained on")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:N (default: accelerate's)")
    parser.add_argument("--dtype", default=None, help="float32 (default), bfloat16, float16 or auto")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per CPU rank")
    parser.add_argument("--cpu", action="store_true", help="CPU ranks even where GPUs are seen")
    parser.add_argument("--fsdp", action="store_true", help="shard the base weights across the ranks (FSDP)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    from learner.policy import LoraSettings
    from learner.rows import RowBatch, RowSettings, build_rows
    from learner.train import GRPOTrainer, TrainSettings
    from memory import MemoryStore
    from runtime.executor import LocalModel

    parallel = DataParallel.from_accelerate(cpu=args.cpu, fsdp=args.fsdp)
    batch: RowBatch | None = None
    if parallel.is_main:
        store = MemoryStore.open(args.memory)
        try:
            withheld = store.trajectories.secret_marked_count(since=args.since, split="train")
            trajectories = store.trajectories.read(since=args.since, split="train")
            batch = build_rows(
                trajectories,
                RowSettings(max_row_tokens=args.max_row_tokens, token_budget=args.token_budget),
                secret_withheld=withheld,
            )
        finally:
            store.close()
    batch = parallel.broadcast(batch)
    assert batch is not None  # rank 0 built it
    if parallel.is_main:
        print(
            f"rows: {batch.stats.rows} in {len(batch.packs)} micro-batches over {parallel.world_size} ranks"
        )
    device = args.device or str(parallel.device)
    model = LocalModel.load(args.model, device=device, dtype=args.dtype, threads=args.threads)
    settings = TrainSettings(
        lora=LoraSettings(rank=args.lora_rank, alpha=args.lora_alpha),
        learning_rate=args.learning_rate,
        updates_per_batch=args.updates,
    )
    trainer = GRPOTrainer(
        model, settings, args.checkpoints, start_adapter=args.start_adapter, parallel=parallel
    )
    if args.fsdp:
        from learner.fsdp import base_numel

        here, whole = base_numel(trainer.policy.module)
        print(f"rank {parallel.rank} holds {here} of {whole} base weights", flush=True)
    for _ in range(trainer.step_count, args.steps):
        metrics = trainer.step(batch)
        if parallel.is_main:
            print(f"{metrics.line()}  grad_norm {metrics.grad_norm:.6g}", flush=True)
    if parallel.is_main:
        print(f"adapter: {trainer.save_adapter(args.output)}")
    parallel.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
