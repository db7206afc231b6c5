"""The one writer path on temper's one database connection.

Every write goes through `Writer.writing()`: a lock (one writer per process) around an apsw
transaction (`BEGIN IMMEDIATE`, so a second process waits on the busy timeout instead of
failing half way). A logical write is one transaction; a crash mid-transaction leaves the
database as it was before it. A `writing()` opened inside another on the same thread joins it
instead of committing by itself: only the outermost one commits or rolls back, so several
writes (of one concern or of several) can be made one logical write.

The store and each of its concerns (inbox, access, episodes, trajectories, ...) share one
`Writer`, so a transaction opened through any of them covers writes made through the others.
"""

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import apsw


class Writer:
    def __init__(self, db: apsw.Connection, on_rollback: Callable[[], None]) -> None:
        self.db = db
        self.lock = threading.RLock()
        self._on_rollback = on_rollback  # forget state that only the rolled-back writes made true
        self._depth = 0  # writes open on the holding thread: only the outermost commits

    @contextmanager
    def writing(self) -> Iterator[apsw.Connection]:
        with self.lock:
            if self._depth:  # inside an outer write: its commit or rollback covers this one
                self._depth += 1
                try:
                    yield self.db
                finally:
                    self._depth -= 1
                return
            self.db.execute("begin immediate")
            self._depth = 1
            try:
                yield self.db
            except BaseException:
                self.db.execute("rollback")
                self._on_rollback()
                raise
            finally:
                self._depth = 0
            self.db.execute("commit")
