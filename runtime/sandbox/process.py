"""Run one command as a host process tree: rlimits, bounded output, and a whole-group kill.

The `local` and `bwrap` backends both end up here: a process started in a new session (so it
leads its own process group), whose output is read into a `BoundedOutput`, and whose group gets
SIGKILL as soon as the command's own process exits (not when its pipe closes) or its timeout
passes, so nothing it left in the background keeps
running (for bwrap, killing bwrap also tears down the pid namespace: see bwrap_sandbox).

Invariants:
- No Python runs between fork and exec: rlimits are set by `prlimit` and the uid/gid drop is
  done by `setpriv` (both util-linux), each execing the next. This matters because the docker
  backend and asyncio.to_thread keep threads alive in the same process. It also keeps
  subprocess on its vfork path: asking subprocess itself to switch user makes it fork, which
  copies the page tables of the whole (large) runtime process: measured 26 ms a command at
  800 MB resident, against under 1 ms.
- When temper runs as root, commands run as `nobody` (65534:65534): the kernel never applies
  RLIMIT_NPROC to uid 0, so as root a fork bomb would not be stopped.
- RLIMIT_NPROC counts every thread of the user on the host, so it is set to the threads the
  user already has plus `Limits.pids`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Mapping

from runtime.sandbox.base import KILLED_EXIT_CODE, CommandResult, Limits, to_the_end
from runtime.sandbox.errors import SandboxUnavailable
from runtime.sandbox.output import BoundedOutput

NOBODY = (65534, 65534)
_DRAIN_S = 1.0  # after the kill, how long to wait for pipe holders that escaped the group


def sandbox_identity() -> tuple[int, int] | None:
    """The host uid/gid commands run as: nobody when we are root, else ourselves (None)."""
    return NOBODY if os.geteuid() == 0 else None


def rlimit_prefix(limits: Limits, identity: tuple[int, int] | None) -> list[str]:
    """`prlimit ... -- [setpriv ... --]` that applies `limits` to the command that follows it,
    run as `identity` when one is given."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        raise SandboxUnavailable("prlimit not found: install util-linux")
    uid = identity[0] if identity else os.getuid()
    drop: list[str] = []
    if identity is not None:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            raise SandboxUnavailable("setpriv not found: install util-linux")
        drop = [setpriv, f"--reuid={identity[0]}", f"--regid={identity[1]}", "--clear-groups", "--"]
    return [
        prlimit,
        f"--as={limits.memory_bytes}",
        f"--nproc={_threads_of(uid) + limits.pids}",
        f"--fsize={limits.file_size_bytes}",
        f"--nofile={limits.open_files}",
        f"--cpu={limits.cpu_seconds}",
        "--core=0",
        "--",
        *drop,
    ]


def watch_children_with_pidfds() -> bool:
    """Wait for child processes through pidfds on the event loop instead of a thread each.

    For a process whose commands all start from one event loop in the main thread, as
    `temper quickstart`'s do; call it before `asyncio.run`. Python 3.11's default watcher starts
    a thread for every child and waits until it runs: 7% of the event loop thread's time in a
    quickstart replay (py-spy), which starts 256 processes a step. Its pidfd watcher serves only
    the loop it is attached to, the main thread's, and refuses children started from a loop in
    another thread, so the daemon, which may run loops in threads, keeps the default. Python
    3.12 waits through pidfds already. Returns whether the pidfd watcher is now in place.
    """
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:  # a kernel before 5.3, or a seccomp filter that refuses it
        return False
    with warnings.catch_warnings():  # set_child_watcher is deprecated from 3.12 on, not used there
        warnings.simplefilter("ignore", DeprecationWarning)
        asyncio.set_child_watcher(asyncio.PidfdChildWatcher())
    return True


async def run_process_tree(
    argv: list[str],
    *,
    command: str,
    cwd: str,
    env: Mapping[str, str],
    timeout_s: float,
    max_output_bytes: int,
) -> CommandResult:
    """Run argv in a new session; SIGKILL its process group on exit, timeout or cancellation."""
    started = time.monotonic()
    output = BoundedOutput(max_output_bytes)
    # Started to the end even when cancelled meanwhile, then the whole group killed. Left to
    # asyncio, a cancellation while it connects the pipes kills only the direct child and waits
    # for the pipes to close; bwrap's inner process, cloned but not yet told by its killed parent
    # to go on, then waits for that word forever and holds the pipe: the task hangs and the
    # process stays (tests/runtime/test_sandbox_cleanup.py makes it happen).
    spawning = asyncio.ensure_future(
        asyncio.get_running_loop().subprocess_exec(
            lambda: _CommandProtocol(output),
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    )
    transport, protocol = await to_the_end(spawning, undo=_abandon)
    try:
        try:
            await asyncio.wait_for(protocol.exited.wait(), timeout_s)
            timed_out = False
        except TimeoutError:
            timed_out = True
        _kill_group(transport.get_pid())
        await protocol.exited.wait()
        # A process outside the group may hold the pipe open: keep what was read by then.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(protocol.closed.wait(), _DRAIN_S)
    except BaseException:
        _kill_group(transport.get_pid())
        raise
    finally:
        transport.close()
    returncode = transport.get_returncode()
    if timed_out or returncode is None:
        exit_code = KILLED_EXIT_CODE
    else:
        exit_code = 128 - returncode if returncode < 0 else returncode
    return CommandResult(
        command=command,
        exit_code=exit_code,
        output=output.render(),
        timed_out=timed_out,
        duration_s=time.monotonic() - started,
        output_bytes=output.total_bytes,
        elided_bytes=output.elided_bytes,
    )


class _CommandProtocol(asyncio.SubprocessProtocol):
    """Feeds output into the buffer; tells apart "the process exited" (`exited`) from "every
    pipe is closed" (`closed`), which a background process can delay forever."""

    def __init__(self, output: BoundedOutput) -> None:
        self.output = output
        self.exited = asyncio.Event()
        self.closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.output.feed(data)

    def process_exited(self) -> None:
        self.exited.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()


def _abandon(started: tuple[asyncio.SubprocessTransport, _CommandProtocol]) -> None:
    """A command started for a caller that was cancelled meanwhile: kill it all."""
    transport, _ = started
    _kill_group(transport.get_pid())
    transport.close()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group is already empty
        os.killpg(pgid, signal.SIGKILL)


COUNT_REUSE_S = 0.1  # how long one count of a user's threads serves the sandboxes that start


def _threads_of(uid: int) -> int:
    """How many threads the host user `uid` runs (what RLIMIT_NPROC counts), counted at most
    once every COUNT_REUSE_S: a count scans every process of the host (~2 ms for a hundred, on
    the event loop), and a replay starts hundreds of commands a second. The count is a moment's
    in any case, since other processes start and end between it and the command's exec; reused,
    it is a tenth of a second older."""
    now = time.monotonic()
    counted = _counts.get(uid)
    if counted is not None and now - counted[0] < COUNT_REUSE_S:
        return counted[1]
    count = _count_threads(uid)
    _counts[uid] = (now, count)
    return count


_counts: dict[int, tuple[float, int]] = {}  # uid -> (when, threads)


def _count_threads(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid == uid:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue  # the process ended while we looked, or is not ours to inspect
    return count
