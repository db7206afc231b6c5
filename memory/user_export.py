"""Everything temper holds about one person, as JSON Lines: one record per line, each with its
`type`, in this order:

    user, identity, session, summary, message, fact (current and superseded, with sources),
    episode (chat and executor), model_call, routing_decision, skill_usage (when the skills
    tables exist), inbox (items they sent), reply (what temper answered), pairing_code,
    access_grant, link_code

The scope is the one `temper users forget` deletes (forget.py): the same person, the same rows,
so what an export shows is what forgetting removes. Model calls carry their text (the messages
sent and the completion) and token counts, not the token ids, which are that text tokenised.
Times are epoch seconds, as stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

import apsw

_QUERIES: tuple[tuple[str, str], ...] = (
    ("user", "select id, handle, display_name, created_at from users where id = :user"),
    ("identity", "select platform, platform_user_id, created_at from identities where user_id = :user"),
    (
        "session",
        "select id, key, platform, chat_id, thread_id, platform_user_id, title, created_at, updated_at,"
        " workspace_snapshot from sessions where user_id = :user order by id",
    ),
    (
        "summary",
        "select session_id, through_message_id, summary, created_at from session_summaries"
        " where session_id in (select id from sessions where user_id = :user) order by id",
    ),
    (
        "message",
        "select m.id, s.key as session, m.role, m.content, m.ts, m.external_id, m.tool_calls, m.tool_call_id"
        " from messages m join sessions s on s.id = m.session_id where m.user_id = :user order by m.id",
    ),
    (
        "fact",
        "select f.id, f.statement, f.kind, f.confidence, f.mentions, f.created_at, f.updated_at,"
        " f.superseded_by, f.supersedes,"
        " (select json_group_array(message_id) from fact_sources where fact_id = f.id) as sources"
        " from facts f where f.user_id = :user order by f.id",
    ),
    (
        "episode",
        "select id, kind, session_id, task, status, reward, reward_source, reward_reason, created_at,"
        " finished_at, split, snapshot_id, verifier, parent_episode_id from episodes"
        " where id in (select id from temp.export_episodes) order by id",
    ),
    (
        "model_call",
        "select episode_id, call_index, role, model, adapter_version, messages, text, finish_reason,"
        " length(completion_ids) / 4 as completion_tokens, latency_s, created_at from model_calls"
        " where episode_id in (select id from temp.export_episodes) order by episode_id, call_index",
    ),
    (
        "routing_decision",
        "select at, session_id, episode_id, kind, route, version, reason from routing_decisions"
        " where episode_id in (select id from temp.export_episodes) order by id",
    ),
    (
        "inbox",
        "select i.platform, i.event_id, i.kind, i.lane, i.payload, i.status, i.received_at, i.finished_at"
        " from inbox i where i.lane in (select key from sessions where user_id = :user)"
        " or exists (select 1 from identities d where d.user_id = :user and d.platform = i.platform"
        "  and json_valid(i.payload) and json_extract(i.payload, '$.user_id') = d.platform_user_id)"
        " order by i.id",
    ),
    (
        "reply",
        "select r.platform, r.chat_id, r.text, r.episode_id, r.created_at, r.sent_at from replies r"
        " where r.episode_id in (select id from temp.export_episodes) order by r.id",
    ),
    (
        "pairing_code",
        "select p.platform, p.platform_user_id, p.user_name, p.status, p.created_at, p.expires_at"
        " from pairing_codes p join identities d on d.platform = p.platform"
        " and d.platform_user_id = p.platform_user_id where d.user_id = :user",
    ),
    (
        "access_grant",
        "select g.platform, g.platform_user_id, g.user_name, g.via, g.granted_at from access_grants g"
        " join identities d on d.platform = g.platform and d.platform_user_id = g.platform_user_id"
        " where d.user_id = :user",
    ),
    (
        "link_code",
        "select platform, platform_user_id, created_at, expires_at, used_at from link_codes where user_id = :user",
    ),
    (
        "link_request",  # requests to join this user, and those their identities sent
        "select r.platform, r.platform_user_id, r.display_name, r.created_at, r.expires_at, r.decision,"
        " r.decided_at from link_requests r where r.user_id = :user or exists (select 1 from identities d"
        " where d.user_id = :user and d.platform = r.platform and d.platform_user_id = r.platform_user_id)",
    ),
)


def export_user(db: apsw.Connection, user_id: int, out: IO[str]) -> dict[str, int]:
    """Write every record about the user to `out`; the number of lines by record type."""
    counts: dict[str, int] = {}
    for record in _records(db, user_id):
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        counts[record["type"]] = counts.get(record["type"], 0) + 1
    return counts


def _records(db: apsw.Connection, user_id: int) -> Iterator[dict[str, Any]]:
    db.execute("create temp table if not exists export_episodes(id integer primary key)")
    db.execute("delete from temp.export_episodes")
    db.execute(
        "insert into temp.export_episodes select id from episodes where user_id = :user"
        " or session_id in (select id from sessions where user_id = :user)",
        {"user": user_id},
    )
    while True:  # executor episodes their chat episodes started
        db.execute(
            "insert or ignore into temp.export_episodes select id from episodes"
            " where parent_episode_id in (select id from temp.export_episodes)"
        )
        if db.changes() == 0:
            break
    for kind, sql in _QUERIES:
        yield from _rows(db, kind, sql, user_id)
        if kind == "routing_decision":
            yield from _skill_usage(db, user_id)


def _rows(db: apsw.Connection, kind: str, sql: str, user_id: int) -> Iterator[dict[str, Any]]:
    cursor = db.execute(sql, {"user": user_id} if ":user" in sql else {})
    columns: list[str] | None = None
    for row in cursor:
        if columns is None:
            columns = [column[0] for column in cursor.description]
        record: dict[str, Any] = {"type": kind}
        for name, value in zip(columns, row):
            if name in ("sources", "tool_calls") and isinstance(value, str):
                value = json.loads(value)
            record[name] = value.hex() if isinstance(value, bytes) else value
        yield record


def _skill_usage(db: apsw.Connection, user_id: int) -> Iterator[dict[str, Any]]:
    """Rows of skills' tables that name the user or one of their episodes (forget.py deletes the
    same rows)."""
    tables = [
        row[0]
        for row in db.execute("select name from sqlite_schema where type = 'table' and name like 'skill%'")
    ]
    for table in tables:
        columns = {row[1] for row in db.execute(f"pragma table_info({table})")}
        if "user_id" in columns:
            yield from _rows(
                db, "skill_usage", f"select '{table}' as tbl, * from {table} where user_id = :user", user_id
            )
        elif "episode_id" in columns:
            yield from _rows(
                db, "skill_usage",
                f"select '{table}' as tbl, * from {table} where episode_id in (select id from temp.export_episodes)",
                user_id,
            )  # fmt: skip
