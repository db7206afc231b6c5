"""Keeping the database small and fast: FTS optimize, WAL checkpoint, incremental vacuum,
a bounded merge of the search indexes' segments between them, and the figures `temper memory
stats` shows.

Why the merge: every write transaction adds a small segment to an FTS5 index, and its
automerge leaves up to 8 a level. A search restricted to given rows (`rowid IN (...)`, how a
question's candidates are scored, recall_rank.py) seeks in every segment for every row: on a
history of 17,000 messages in 22 segments that took 42 ms, and 1.5 ms once merged into one.
A full optimize rewrites the whole index (seconds on a large one, holding the write lock), so
the daemon runs it weekly; `merge_segments` does a bounded amount of merging (at most
`pages` pages written) and is cheap enough to run every hour."""

import os
import time
from pathlib import Path

import apsw

from .migrations import current_version
from .records import MemoryStats


def maintain(db: apsw.Connection) -> dict[str, float]:
    """Run each maintenance step; return the seconds each took."""
    timings: dict[str, float] = {}
    for name, sql in (
        ("fts_optimize", "insert into messages_fts(messages_fts) values ('optimize')"),
        ("trigram_optimize", "insert into messages_trigram(messages_trigram) values ('optimize')"),
        ("incremental_vacuum", "pragma incremental_vacuum"),
        ("wal_checkpoint", "pragma wal_checkpoint(truncate)"),  # last: the steps above write
    ):
        started = time.perf_counter()
        for _ in db.execute(sql):
            pass
        timings[name] = round(time.perf_counter() - started, 4)
    return timings


MERGE_PAGES = 500  # pages one merge step may write (FTS5 'merge' with -N: any two segments)
FTS_INDEXES = ("messages_fts", "messages_trigram")


def merge_segments(db: apsw.Connection, pages: int = MERGE_PAGES) -> dict[str, int]:
    """One bounded merge step on each search index (see the module docstring); the segments
    each has left."""
    left = {}
    for index in FTS_INDEXES:
        db.execute(f"insert into {index}({index}, rank) values ('merge', ?)", (-pages,))
        left[index] = segments(db, index)
    return left


def segments(db: apsw.Connection, index: str) -> int:
    """How many segments the FTS5 index `index` has."""
    return db.execute(f"select count(distinct segid) from {index}_idx").fetchone()[0]


def stats(db: apsw.Connection, path: Path | None) -> MemoryStats:
    def count(table: str) -> int:
        return db.execute(f"select count(*) from {table}").fetchone()[0]

    text_bytes = db.execute(
        "select coalesce(sum(length(cast(content as blob))), 0) from messages"
    ).fetchone()[0]
    database_bytes, wal_bytes = file_sizes(path)
    return MemoryStats(
        users=count("users"),
        sessions=count("sessions"),
        messages=count("messages"),
        facts=count("facts"),
        episodes=count("episodes"),
        text_bytes=text_bytes,
        database_bytes=database_bytes,
        wal_bytes=wal_bytes,
        trigram_rows=count("messages_trigram_docsize"),
        schema_version=current_version(db),
    )


def file_sizes(path: Path | None) -> tuple[int, int]:
    """Bytes of the database file and of its WAL (0, 0 for an in-memory database)."""
    if path is None:
        return 0, 0
    wal = Path(str(path) + "-wal")
    return os.path.getsize(path), (os.path.getsize(wal) if wal.exists() else 0)
