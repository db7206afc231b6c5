"""Forgetting a person: every row temper holds about them deleted, and their text gone from the
database's files, not only from its tables.

What goes, in one transaction: their messages (the word and trigram indexes' entries go with
them, through the external-content delete triggers, which hand FTS5 the old text it needs to
find them), session summaries, sessions, facts and their history, chat and executor episodes
with their model calls and routing decisions, the replies sent to them and the daemon's inbox
items they caused, pairing codes and access grants of their identities (so they are asked to
pair again, unless a configured allowlist names them), link codes, rows of skill-usage tables
that name them or their episodes, their hybrid-search vectors, their identities and the user.
A kind of terminal task whose example instruction was theirs keeps only its masked signature.

Then the text leaves the files. A deleted row's bytes stay on its page, and FTS5 deletes are
tombstones until segments merge, so: the three full-text indexes are merged ('optimize'), the
WAL is checkpointed into the database and truncated, the database is rebuilt by VACUUM (which
writes live rows only), and the WAL is checkpointed and truncated again. `secure_delete` is on
meanwhile, so freed pages are zeroed even before VACUUM. Another connection reading at that
moment (a running daemon) can keep the checkpoint from completing: `checkpointed` says so, and
the next maintenance run finishes it.

What cannot be undone here: workspace snapshots are files (the report lists the ids only they
referenced, for the caller to delete), and an executor already trained on their episodes keeps
what it learned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import apsw

from .maintenance import file_sizes
from .writer import Writer

FTS_INDEXES = ("messages_fts", "messages_trigram", "facts_fts")


@dataclass
class ForgetReport:
    user_id: int
    handle: str
    deleted: dict[str, int] = field(default_factory=dict)  # rows by table
    snapshot_ids: tuple[str, ...] = ()  # workspace snapshots nothing else refers to: delete the files
    checkpointed: bool = False  # the WAL was fully written back and truncated
    database_bytes: int = 0
    wal_bytes: int = 0
    seconds: float = 0.0


def forget_user(writer: Writer, user_id: int, path: Path | None) -> ForgetReport:
    started = time.perf_counter()
    db = writer.db
    with writer.lock:
        secure = db.execute("pragma secure_delete").fetchone()[0]
        _pragma(db, "pragma secure_delete = on")
        try:
            with writer.writing():
                report = _delete(db, user_id)
                for index in FTS_INDEXES:
                    db.execute(f"insert into {index}({index}) values ('optimize')")
            report.checkpointed = _checkpoint(db)
            _pragma(db, "vacuum")
            report.checkpointed = _checkpoint(db) and report.checkpointed
        finally:
            _pragma(db, f"pragma secure_delete = {int(secure)}")
    report.database_bytes, report.wal_bytes = file_sizes(path)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _delete(db: apsw.Connection, user_id: int) -> ForgetReport:
    handle = db.execute("select handle from users where id = ?", (user_id,)).fetchone()[0]
    report = ForgetReport(user_id, handle)

    def run(table: str, sql: str, *bindings: object) -> None:
        db.execute(sql, bindings)
        if changed := db.changes():
            report.deleted[table] = report.deleted.get(table, 0) + changed

    db.execute("create temp table if not exists forget_sessions(id integer primary key)")
    db.execute("create temp table if not exists forget_episodes(id integer primary key)")
    db.execute("create temp table if not exists forget_messages(id integer primary key)")
    for table in ("forget_sessions", "forget_episodes", "forget_messages"):
        db.execute(f"delete from temp.{table}")
    db.execute("insert into temp.forget_sessions select id from sessions where user_id = ?", (user_id,))
    db.execute(
        "insert into temp.forget_messages select id from messages"
        " where user_id = ? or session_id in (select id from temp.forget_sessions)",
        (user_id,),
    )
    db.execute(
        "insert or ignore into temp.forget_episodes select id from episodes"
        " where user_id = ? or session_id in (select id from temp.forget_sessions)",
        (user_id,),
    )
    while True:  # executor episodes a chat episode of theirs started, however deep
        db.execute(
            "insert or ignore into temp.forget_episodes select id from episodes"
            " where parent_episode_id in (select id from temp.forget_episodes)"
        )
        if db.changes() == 0:
            break
    snapshots = _snapshot_ids(db)
    identities = db.execute(
        "select platform, platform_user_id from identities where user_id = ?", (user_id,)
    ).fetchall()
    session_keys = [row[0] for row in db.execute("select key from sessions where id in temp.forget_sessions")]

    # The daemon's records: inbox items of their sessions or sent by them, replies to them.
    for platform, platform_user_id in identities:
        run(
            "inbox",
            "delete from inbox where platform = ? and json_valid(payload)"
            " and json_extract(payload, '$.user_id') = ?",
            platform,
            platform_user_id,
        )
        run("pairing_codes", "delete from pairing_codes where platform = ? and platform_user_id = ?",
            platform, platform_user_id)  # fmt: skip
        run("access_grants", "delete from access_grants where platform = ? and platform_user_id = ?",
            platform, platform_user_id)  # fmt: skip
        # Link requests they sent (those to join them go with the user, by cascade).
        run("link_requests", "delete from link_requests where platform = ? and platform_user_id = ?",
            platform, platform_user_id)  # fmt: skip
    for key in session_keys:
        run("inbox", "delete from inbox where lane = ?", key)
    run(
        "inbox",
        "delete from inbox where id in (select inbox_id from replies where episode_id in temp.forget_episodes)",
    )
    run("link_codes", "delete from link_codes where user_id = ?", user_id)
    for table, column in _skill_tables(db):
        if column == "user_id":
            run(table, f"delete from {table} where user_id = ?", user_id)
        else:
            run(table, f"delete from {table} where {column} in temp.forget_episodes")

    # Their work: routing decisions, task-kind examples, model calls, episodes.
    run(
        "routing_decisions",
        "delete from routing_decisions where episode_id in temp.forget_episodes"
        " or session_id in temp.forget_sessions",
    )
    run(
        "task_kinds",
        "update task_kinds set example = signature where example in"
        " (select task from episodes where id in temp.forget_episodes)",
    )
    run("model_calls", "delete from model_calls where episode_id in temp.forget_episodes")
    run("episodes", "delete from episodes where id in temp.forget_episodes")

    # What they said and what temper learned from it.
    run("facts", "delete from facts where user_id = ?", user_id)
    _delete_vectors(db)
    run("messages", "delete from messages where id in temp.forget_messages")
    run("session_summaries", "delete from session_summaries where session_id in temp.forget_sessions")
    run("sessions", "delete from sessions where id in temp.forget_sessions")
    run("identities", "delete from identities where user_id = ?", user_id)
    run("users", "delete from users where id = ?", user_id)
    report.snapshot_ids = tuple(sorted(snapshot for snapshot in snapshots if not _still_used(db, snapshot)))
    return report


def _snapshot_ids(db: apsw.Connection) -> set[str]:
    rows = db.execute(
        "select workspace_snapshot from sessions where id in temp.forget_sessions and workspace_snapshot is not null"
        " union select snapshot_id from episodes where id in temp.forget_episodes and snapshot_id is not null"
    ).fetchall()
    return {row[0] for row in rows}


def _still_used(db: apsw.Connection, snapshot: str) -> bool:
    """Snapshots are content-addressed: another person's identical workspace may share one."""
    return (
        db.execute(
            "select 1 from sessions where workspace_snapshot = ? union all select 1 from episodes where snapshot_id = ?"
            " limit 1",
            (snapshot, snapshot),
        ).fetchone()
        is not None
    )


def _skill_tables(db: apsw.Connection) -> list[tuple[str, str]]:
    """Skill-usage tables (skills' own migration) and the column that ties a row to a person:
    `user_id`, else `episode_id`."""
    found = []
    for (table,) in db.execute("select name from sqlite_schema where type = 'table' and name like 'skill%'"):
        columns = {row[1] for row in db.execute(f"pragma table_info({table})")}
        for column in ("user_id", "episode_id"):
            if column in columns:
                found.append((table, column))
                break
    return found


def _delete_vectors(db: apsw.Connection) -> None:
    if db.execute("select 1 from sqlite_schema where name = 'message_vectors'").fetchone() is None:
        return
    from .embedding import load_vec_extension

    load_vec_extension(db)
    db.execute("delete from message_vectors where rowid in temp.forget_messages")


def _checkpoint(db: apsw.Connection) -> bool:
    """Write the WAL back and truncate it; False when a reader kept part of it."""
    busy, log, done = db.execute("pragma wal_checkpoint(truncate)").fetchone()
    return busy == 0 and (log == done or log == -1)


def _pragma(db: apsw.Connection, sql: str) -> None:
    for _ in db.execute(sql):
        pass
