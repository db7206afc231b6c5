"""Intra-op threads for the stretches where training has the cores to itself.

    with training_threads(settings.threads):   # None: the process's setting, untouched
        ...forward, backward, optimizer step...

The project runs torch with one thread (FACTS.md): two threads were 3-4x slower where other
work shares the two cores, and a replay does share them (its sandboxes' processes run beside
the sampler). An update or an epoch of supervised training is different when nothing else runs
meanwhile, as in the quickstart, whose event loop waits for the update: there a second thread
makes the tiny executor's forward and backward ~1.7x faster (measured on the 2-core machine).
So `SFTSettings.threads` and `TrainSettings.threads` say how many threads the training itself
uses, and the previous count is restored after it, before anything samples again.

torch's count is the process's: a training stretch and a sampling one must not overlap, which
holds wherever the caller waits for the update before it samples (the quickstart, a night's
cycle without a served executor).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


def check_threads(count: int | None) -> None:
    """A settings object's `threads`, checked where it is built: None or at least 1."""
    if count is not None and count < 1:
        raise ValueError(f"threads must be at least 1 (None: as the process has it); got {count}")


@contextmanager
def training_threads(count: int | None) -> Iterator[None]:
    """torch's intra-op threads set to `count` for the block, then restored; None: unchanged."""
    check_threads(count)
    if count is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
