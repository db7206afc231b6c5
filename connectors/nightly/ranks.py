"""The learning cycle's worker as several processes (`[learner] launcher = "accelerate"`):

    accelerate launch --multi_gpu --num_processes N ... -m connectors.nightly.ranks \\
        --device DEVICE --nice NICE RESULT_FILE MINUTES ITERATIONS PER_FAMILY PARENT_PID

Rank 0 is the worker of connectors/nightly/worker.py, unchanged: the config on its stdin, the
progress file, the lock, the result file, cancellation by SIGTERM; its cycle trains with the other
ranks (learner/followers.py). It exits 0 once the result file holds the outcome, failed or not
(the exit code would only add the launcher's traceback); non-zero only when the cycle failed
inside a training step, so that the launcher ends the ranks left in its collectives.

The other ranks read nothing (not even stdin: rank 0's config and its secrets stay rank 0's),
build the trainer rank 0 describes and take their share of each step. They ignore SIGTERM, since a rank that left would fail rank 0's next step: rank 0 stops at
its next iteration boundary and releases them, and the launcher ends whatever is left.

The ranks' process group: gloo when the cycle trains on the CPU (`--device cpu`, or `auto`
without a GPU), else nccl, one GPU a rank (cuda:<local rank>). A rank waits up to RANK_TIMEOUT_S
for rank 0's next message (its replays and the distillation run between them).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

RANK_TIMEOUT_S = 24 * 3600.0
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(prog="python -m connectors.nightly.ranks")
    parser.add_argument("--device", default="auto", help="the executor's device: auto, cpu, cuda, cuda:N")
    parser.add_argument("--nice", type=int, default=0, help="the niceness the following ranks add")
    return parser.parse_known_args(list(argv))


def on_cpu(device: str) -> bool:
    """Whether the ranks train on the CPU (gloo): every rank answers alike on one machine."""
    if device == "cpu":
        return True
    if device == "auto":
        import torch

        return not torch.cuda.is_available()
    return False


def main(argv: Sequence[str] | None = None) -> int:
    options, worker_arguments = parse(sys.argv[1:] if argv is None else argv)
    from connectors.nightly import worker
    from learner.data_parallel import DataParallel
    from learner.followers import Followers, follow

    parallel = DataParallel.from_accelerate(cpu=on_cpu(options.device), timeout_s=RANK_TIMEOUT_S)
    if parallel.is_main:
        followers = Followers(parallel)
        code = worker.main(worker_arguments, followers=followers)
        # However the cycle ended (before training: busy, a setup error), the others may leave;
        # unless it failed inside a step, where they are in its collectives: then this rank's
        # failure makes the launcher end them.
        followers.release()
        if not followers.released:
            return code or worker.EXIT_FAILED
        parallel.close()
        # The outcome, failed or not, is in the result file; an exit code would only add the
        # launcher's own traceback to the log.
        return 0

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _die_with_the_launcher()
    os.nice(options.nice)
    follow(parallel, say=lambda line: print(line, flush=True))
    parallel.close()
    return 0


def _die_with_the_launcher() -> None:
    """A following rank holds nothing worth saving: if the launcher is killed (the daemon's stop
    after its grace), the kernel kills this rank too instead of leaving it waiting for rank 0."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    if os.getppid() == 1:  # the launcher died before the call: nobody will release this rank
        os._exit(1)


if __name__ == "__main__":
    sys.exit(main())
