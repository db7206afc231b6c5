"""Opening temper's SQLite database through apsw.

Invariants: WAL journal, synchronous=NORMAL (a crash loses at most the last transactions
since the last checkpoint, never corrupts), foreign keys on, a busy timeout so a second
process waits instead of failing, incremental auto-vacuum set before the first table exists.
Reads go through a memory map of the file's first MMAP_BYTES (SQLite maps it read-only; writes
still go through the WAL): a search's rows are read where they lie instead of copied in by a
system call each. At a million messages (a 600 MB file, ten times the page cache) it saves
about 5% of a typical search (docs/benchmarks.md).
Pragmas are issued one statement at a time: apsw runs a later statement in a multi-statement
string only when the cursor is consumed (FACTS.md).
"""

from pathlib import Path

import apsw

from . import ranking

BUSY_TIMEOUT_MS = 5_000
PAGE_CACHE_KIB = 64 * 1024
MMAP_BYTES = 4 << 30


def connect(path: Path | str) -> apsw.Connection:
    """Open (creating if needed) the database at `path` with temper's pragmas."""
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    connection = apsw.Connection(str(path))
    connection.set_busy_timeout(BUSY_TIMEOUT_MS)
    is_new = _scalar(connection, "select count(*) from sqlite_schema") == 0
    if is_new:
        # Must precede the first table: afterwards it needs a full VACUUM to change.
        connection.execute("pragma auto_vacuum = incremental")
    for pragma in (
        "pragma journal_mode = wal",
        "pragma synchronous = normal",
        "pragma foreign_keys = on",
        f"pragma cache_size = -{PAGE_CACHE_KIB}",
        "pragma temp_store = memory",
        f"pragma mmap_size = {MMAP_BYTES}",
    ):
        for _ in connection.execute(pragma):
            pass
    ranking.register(connection)
    return connection


def _scalar(connection: apsw.Connection, sql: str, bindings: tuple = ()) -> object:
    row = connection.execute(sql, bindings).fetchone()
    return None if row is None else row[0]
