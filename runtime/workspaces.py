"""Each session's sandbox: opened on first use, kept while the session is active, and put
away (snapshot, then stop) when evicted or when the runtime shuts down.

A workspace outlives its sandbox through snapshots: `put_away` returns the snapshot id the
caller stores on the session, and the next `get` for the session starts from it. At most
`max_open` sandboxes run at once (least recently used put away first), so a daemon with
many sessions holds a bounded number of processes and directories.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from runtime.sandbox import BackendName, Sandbox, SandboxOptions, Snapshot, SnapshotError, open_sandbox


class Workspaces:
    def __init__(
        self,
        backend: BackendName,
        options: SandboxOptions,
        snapshot_dir: Path,
        on_snapshot: Callable[[int, str], None],
        max_open: int = 8,
    ) -> None:
        self.backend = backend
        self.options = options
        self.snapshot_dir = Path(snapshot_dir)
        self.on_snapshot = on_snapshot
        self.max_open = max_open
        self._open: OrderedDict[int, Sandbox] = OrderedDict()

    async def get(self, session_id: int, snapshot_id: str | None) -> Sandbox:
        """The session's running sandbox, started (from its last snapshot) if needed."""
        if session_id in self._open:
            self._open.move_to_end(session_id)
            return self._open[session_id]
        while len(self._open) >= self.max_open:
            oldest = next(iter(self._open))
            await self.put_away(oldest)
        start_from: Snapshot | None = None
        if snapshot_id is not None:
            try:
                start_from = Snapshot.load(self.snapshot_dir, snapshot_id)
            except SnapshotError:
                start_from = None  # pruned or lost: an empty workspace beats no sandbox
        sandbox = await open_sandbox(self.backend, workspace=start_from, options=self.options)
        self._open[session_id] = sandbox
        return sandbox

    def is_open(self, session_id: int) -> bool:
        return session_id in self._open

    async def put_away(self, session_id: int) -> None:
        """Snapshot the session's workspace (reporting the id) and stop its sandbox."""
        sandbox = self._open.pop(session_id, None)
        if sandbox is None:
            return
        try:
            snapshot = await sandbox.snapshot(self.snapshot_dir)
            self.on_snapshot(session_id, snapshot.id)
        finally:
            await sandbox.stop()

    async def close(self) -> None:
        """Put every sandbox away. One that cannot be snapshotted (a full disk, a file its
        command made unreadable) is still stopped, and so are all the others: the first
        failure is raised once none is left running."""
        failure: BaseException | None = None
        while self._open:
            try:
                await self.put_away(next(iter(self._open)))
            except BaseException as error:  # a cancellation too: raised once all are stopped
                failure = failure or error
        if failure is not None:
            raise failure
