"""Keeping the database small and fast: FTS optimize, WAL checkpoint, incremental vacuum,
and the figures `temper memory stats` shows."""

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
