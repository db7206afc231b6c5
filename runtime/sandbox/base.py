"""The one sandbox interface every backend implements, and the workspace logic they share.

A sandbox owns a private host directory, `root`, made at start and removed at stop:

```
root/                 (0711, so an unprivileged sandbox user can traverse it)
  workspace/          what commands see as their working directory (`workdir` inside)
  home/               private HOME and TMPDIR where a backend has no tmpfs of its own
```

Invariants:
- `root` is removed however the sandbox ends: stopped, failing to start, or cancelled while it
  starts or stops (a replay cancels dozens at once when one attempt fails). Blocking file work
  runs in a thread that is awaited to its end even when cancelled, so it never runs on after
  the directory was removed.
- Commands, file reads/writes and snapshots are serialised by one lock: a file operation never
  races a running command.
- When a command returns (exit or timeout), nothing it started is still running: backends kill
  the whole process tree (process group, pid namespace or container processes). A server a task
  needs must therefore be started in the same command that uses it. Likewise /tmp is scratch
  that may not outlive a command (bwrap gives each command a new one): state lives in the
  workspace.
- Files are read and written from the host side, but never through a symlink or `..` that leaves
  the workspace (the sandbox may have planted links). New files are owned by the sandbox's user.
- Commands see a clean environment: `PATH`, `HOME`, `TMPDIR`, `LANG`, `TERM` and the caller's
  `env`, never the host's variables (which hold API keys).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import inspect
import os
import shutil
import stat
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import ClassVar, TypeVar

from runtime.sandbox.errors import SandboxStateError, WorkspacePathError
from runtime.sandbox.snapshot import Snapshot, copy_tree, restore_snapshot, take_snapshot

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
KILLED_EXIT_CODE = 128 + 9  # what a shell reports for SIGKILL; every backend reports timeouts so

T = TypeVar("T")

WorkspaceState = Snapshot | Path | None
"""Where a workspace starts: a snapshot, a host directory to copy, or None for empty."""


@dataclass(frozen=True)
class Limits:
    """Resource limits for everything one sandbox runs."""

    memory_bytes: int = 1 << 30
    pids: int = 256
    cpus: float = 1.0  # docker only: host backends cannot cap a share of CPU without cgroups
    cpu_seconds: int = 600  # per process (RLIMIT_CPU); host backends
    file_size_bytes: int = 1 << 30
    open_files: int = 1024


@dataclass(frozen=True)
class SandboxOptions:
    """Everything a backend needs besides the workspace. Built from the [sandbox] config."""

    limits: Limits = field(default_factory=Limits)
    network: bool = False
    env: dict[str, str] = field(default_factory=dict)
    max_output_bytes: int = 64 * 1024
    workdir_root: Path | None = None  # where sandbox roots are made; default: the system temp dir
    docker_image: str = "temper-sandbox:latest"


@dataclass(frozen=True)
class BackendStatus:
    """Whether a backend can run here, and why not (or what it runs on), for `temper doctor`."""

    name: str
    available: bool
    detail: str


@dataclass(frozen=True)
class CommandResult:
    """What one command did. `exit_code` is 128 + signal for a killed command (137 on timeout)."""

    command: str
    exit_code: int
    output: str  # stdout and stderr interleaved, bounded: head …[N bytes elided]… tail
    timed_out: bool
    duration_s: float
    output_bytes: int  # how much the command printed in all
    elided_bytes: int

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class Sandbox(ABC):
    """Start from a workspace state, run commands, read/write files, snapshot, stop.

    Get one from `open_sandbox` (started, and stopped at the end of `async with`), or construct
    a backend and call `start()` / `stop()` yourself. `warning` is a sentence to show the user
    when the backend isolates little.
    """

    name: ClassVar[str]
    warning: ClassVar[str | None] = None
    workdir: str  # the workspace's path as commands see it

    def __init__(self, options: SandboxOptions | None = None) -> None:
        self.options = options or SandboxOptions()
        self._lock = asyncio.Lock()
        self._root: Path | None = None
        self._stopped = False

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def workspace(self) -> Path:
        """The workspace on the host."""
        if self._root is None or self._stopped:
            raise SandboxStateError(f"{self.name} sandbox is not running")
        return self._root / "workspace"

    async def start(self, workspace_state: WorkspaceState = None) -> None:
        if self._root is not None:
            raise SandboxStateError(f"{self.name} sandbox was already started")
        # Made here, before any await (one mkdir), so that every way out below, a cancellation
        # included, knows the directory to remove.
        self._root = Path(tempfile.mkdtemp(prefix="temper-sandbox-", dir=self.options.workdir_root))
        try:
            await _in_thread_to_the_end(self._fill_root, self._root, workspace_state)
            await self._boot()
        except BaseException:
            self._stopped = True
            await _in_thread_to_the_end(_remove_tree, self._root)
            raise

    async def stop(self) -> None:
        """Stop the backend and delete the workspace. Safe to call twice; the directory is
        deleted even when the stop is cancelled or the backend fails to stop."""
        if self._root is None or self._stopped:
            return
        try:
            async with self._lock:
                self._stopped = True
                await self._shutdown()
        finally:
            self._stopped = True
            await _in_thread_to_the_end(_remove_tree, self._root)

    async def __aenter__(self) -> Sandbox:
        if self._root is None:
            await self.start(None)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- commands and files ------------------------------------------------------------------

    async def run(self, command: str, timeout_s: float) -> CommandResult:
        """Run `command` with /bin/sh in the workspace; kill all it started by `timeout_s`."""
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        async with self._lock:
            self._check_running()
            return await self._run(command, timeout_s)

    async def read_file(self, path: str) -> bytes:
        """The bytes of a workspace file (FileNotFoundError if there is none)."""
        async with self._lock:
            target = self._resolve(path)
            return await asyncio.to_thread(_read_regular, target)

    async def write_file(self, path: str, data: bytes | str, *, mode: int = 0o644) -> None:
        """Create or replace a workspace file, making its parent directories."""
        payload = data.encode() if isinstance(data, str) else data
        async with self._lock:
            target = self._resolve(path)
            await asyncio.to_thread(self._write, target, payload, mode)

    async def snapshot(self, store: Path) -> Snapshot:
        """Store the workspace as a content-addressed tarball under `store`."""
        async with self._lock:
            self._check_running()
            return await asyncio.to_thread(take_snapshot, self.workspace, Path(store))

    # -- what a backend provides --------------------------------------------------------------

    @classmethod
    @abstractmethod
    async def probe(cls, options: SandboxOptions) -> BackendStatus:
        """Whether this backend can run here with `options`, found by trying it."""

    @abstractmethod
    async def _boot(self) -> None:
        """Make the backend ready to run commands in `self.workspace`."""

    @abstractmethod
    async def _run(self, command: str, timeout_s: float) -> CommandResult:
        """Run one command; the lock is held."""

    @abstractmethod
    async def _shutdown(self) -> None:
        """Release what `_boot` took; the workspace is deleted afterwards."""

    def _owner(self) -> tuple[int, int] | None:
        """Host uid/gid that must own workspace files, or None for the current user."""
        return None

    # -- shared internals ---------------------------------------------------------------------

    def _environment(self, home: str) -> dict[str, str]:
        base = {
            "PATH": DEFAULT_PATH,
            "HOME": home,
            "TMPDIR": home,
            "LANG": "C.UTF-8",
            "TERM": "dumb",
        }
        return {**base, **self.options.env}

    def _check_running(self) -> None:
        if self._root is None:
            raise SandboxStateError(f"{self.name} sandbox was not started")
        if self._stopped:
            raise SandboxStateError(f"{self.name} sandbox was stopped")

    def _fill_root(self, root: Path, state: WorkspaceState) -> None:
        """Make the workspace and home in `root` (blocking I/O); the caller removes `root` on error."""
        root.chmod(0o711)
        workspace, home = root / "workspace", root / "home"
        workspace.mkdir()
        home.mkdir(mode=0o700)
        if isinstance(state, Snapshot):
            restore_snapshot(state, workspace)
        elif state is not None:
            copy_tree(Path(state), workspace)
        owner = self._owner()
        if owner is not None:
            for path in [home, workspace, *_tree(workspace)]:
                os.chown(path, *owner, follow_symlinks=False)

    def _resolve(self, path: str) -> Path:
        """The host path for `path` (relative, or absolute under `workdir`) in the workspace."""
        self._check_running()
        pure = PurePosixPath(path)
        if pure.is_absolute():
            try:
                pure = pure.relative_to(self.workdir)
            except ValueError:
                raise WorkspacePathError(f"{path} is not under the workspace {self.workdir}") from None
        if not pure.parts or ".." in pure.parts:
            raise WorkspacePathError(f"{path!r} does not name a file inside the workspace")
        workspace = self.workspace.resolve()
        parent = (workspace / pure).parent.resolve()
        if parent != workspace and workspace not in parent.parents:
            raise WorkspacePathError(f"{path} leads outside the workspace through a symlink")
        return parent / pure.name

    def _write(self, target: Path, payload: bytes, mode: int) -> None:
        workspace = self.workspace.resolve()
        owner = self._owner()
        for directory in reversed([target.parent, *target.parent.parents]):
            if workspace in directory.parents and not directory.exists():
                directory.mkdir()
                if owner is not None:
                    os.chown(directory, *owner)
        fd = _open_regular(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as stream:
            os.fchmod(fd, mode)
            if owner is not None:
                os.fchown(fd, *owner)
            stream.write(payload)


async def _in_thread_to_the_end(function: Callable[..., T], *args: object) -> T:
    """`function(*args)` in a thread, awaited to its end even when the caller is cancelled
    meanwhile; the cancellation is raised afterwards. A cancelled `asyncio.to_thread` returns at
    once while its thread runs on: a workspace would be filled after it was removed (or made
    and never removed), and a removal would still be under way when `stop` returned."""
    return await to_the_end(asyncio.get_running_loop().run_in_executor(None, function, *args))


async def to_the_end(future: asyncio.Future[T], undo: Callable[[T], object] | None = None) -> T:
    """The result of `future`, awaited to its end even when the caller is cancelled meanwhile.

    A cancellation that arrived is raised once `future` is done, after `undo(result)` has
    released what it made (nobody else will: the caller never sees the result); an `undo` that
    returns an awaitable is awaited to its end too. An error of `future` after a cancellation
    is dropped for the cancellation."""
    cancelled: asyncio.CancelledError | None = None
    while True:
        try:
            result = await asyncio.shield(future)
        except asyncio.CancelledError as error:
            if future.cancelled():  # the future itself gave up: nothing more to wait for
                raise
            cancelled = error
            continue
        except Exception:
            if cancelled is not None:
                raise cancelled from None
            raise
        break
    if cancelled is not None:
        if undo is not None:
            undoing = undo(result)
            if inspect.isawaitable(undoing):
                await to_the_end(asyncio.ensure_future(undoing))
        raise cancelled
    return result


def _remove_tree(root: Path) -> None:
    """Delete a sandbox's directory, including what its commands made read-only: an entry of a
    directory without write permission cannot be unlinked (root aside), so `chmod -w dir` or a
    Go module cache would otherwise keep the whole root alive. No command runs any more, so
    nothing swaps a directory for a symlink while this walks."""
    shutil.rmtree(root, ignore_errors=True)
    if not root.exists():
        return
    for directory, dirnames, _ in os.walk(root):  # top-down: a directory is opened before listed
        for name in dirnames:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                with contextlib.suppress(OSError):  # not ours: nothing to be done
                    os.chmod(path, 0o700)
    shutil.rmtree(root, ignore_errors=True)


def _read_regular(target: Path) -> bytes:
    with os.fdopen(_open_regular(target, os.O_RDONLY), "rb") as stream:
        return stream.read()


def _open_regular(target: Path, flags: int, mode: int = 0o644) -> int:
    """Open a regular file, never through a final symlink, never blocking on a planted FIFO."""
    try:
        fd = os.open(target, flags | os.O_NOFOLLOW | os.O_NONBLOCK, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WorkspacePathError(f"{target.name} is a symlink; it is not followed") from exc
        if exc.errno == errno.ENXIO:
            raise WorkspacePathError(f"{target.name} is not a regular file") from exc
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WorkspacePathError(f"{target.name} is not a regular file")
    os.set_blocking(fd, True)
    return fd


def _tree(root: Path) -> list[Path]:
    """Everything under root, symlinks listed but not followed."""
    found: list[Path] = []
    for directory, dirnames, filenames in os.walk(root):
        found.extend(Path(directory) / name for name in dirnames + filenames)
    return found
