"""How sandboxed commands start. The pids limit of a command (`prlimit --nproc`) is the threads
the sandbox's host user runs at the time plus `Limits.pids`. That count scans every process of the host, so
commands starting together share one count, at most COUNT_REUSE_S old."""

from __future__ import annotations

import os
import subprocess

import pytest

from runtime.sandbox import process
from runtime.sandbox.base import Limits
from runtime.sandbox.process import rlimit_prefix

UNUSED_UID = 64999  # no account, so only the processes this test starts run as it


def nproc(limits: Limits) -> int:
    (option,) = [
        part for part in rlimit_prefix(limits, (UNUSED_UID, UNUSED_UID)) if part.startswith("--nproc=")
    ]
    return int(option.removeprefix("--nproc="))


@pytest.mark.skipif(os.geteuid() != 0, reason="starting processes as another user needs root")
def test_the_limit_counts_the_users_threads_and_reuses_a_fresh_count(monkeypatch: pytest.MonkeyPatch) -> None:
    limits = Limits(pids=64)
    monkeypatch.setattr(process, "COUNT_REUSE_S", 0.0)  # every call counts
    assert nproc(limits) == 64  # nothing runs as the user

    monkeypatch.setattr(process, "COUNT_REUSE_S", 60.0)  # (a loaded machine may take 0.1 s to start three)
    sleepers = [subprocess.Popen(["sleep", "30"], user=UNUSED_UID, group=UNUSED_UID) for _ in range(3)]
    try:
        assert nproc(limits) == 64  # the count of a moment ago serves
        monkeypatch.setattr(process, "COUNT_REUSE_S", 0.0)
        assert nproc(limits) == 64 + 3  # a new count sees the three
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
    assert nproc(limits) == 64
