"""The peer's session store, rebuilt for bench/memory.py: Hermes Agent's state.db and its search.

What is kept from the peer (NousResearch/hermes-agent: hermes_state_common.py's SCHEMA_SQL,
FTS_SQL and FTS_TRIGRAM_SQL; hermes_state_search.py's `search_messages`), as it really runs:

- `sessions` and `messages` tables (the columns a search reads or filters on; the peer has
  ~25 more per table, all NULL or default here), `idx_messages_session` and
  `idx_messages_session_id`, `state_meta`;
- `messages_fts`: FTS5 over `content, tool_name, tool_calls`, external content read through the
  `messages_fts_src` view, the default tokenizer (unicode61, no stemming), kept in sync by an
  insert trigger gated on the rebuild high-water keys of `state_meta`; `messages_fts_trigram`
  (trigram tokenizer, its own view and trigger) for substring and CJK search;
- one search, as `SessionDB.search_messages(query, limit=10)` with default arguments runs it:
  the query sanitised (special characters stripped, bare words joined by FTS5's implicit AND),
  the stale-index check, the MATCH joined to `messages` and `sessions` with the visibility
  filters, `snippet()` of 40 tokens, `ORDER BY rank`, then the rebuild-status read, the trigram
  retry when nothing matched, and the one-message context before and after each hit.

What differs: it runs through apsw on the same SQLite build as temper (the system's sqlite3
module here is 3.40), rows become dicts as `sqlite3.Row` would, and ingest is batched 10,000
messages a transaction (the peer commits one message per transaction): both favour the peer.
The peer's search has no user filter (its tool narrows by platform source), so it is timed on
the all-users queries only.
"""

import re
from pathlib import Path
from typing import Any

import apsw

SCHEMA = """
create table sessions (
    id text primary key, source text not null, user_id text, session_key text, model text,
    model_config text, parent_session_id text, started_at real not null, ended_at real,
    end_reason text, message_count integer default 0, title text
);
create table messages (
    id integer primary key autoincrement, session_id text not null references sessions(id),
    role text not null, content text, tool_call_id text, tool_calls text, tool_name text,
    timestamp real not null, token_count integer, finish_reason text, reasoning text,
    active integer not null default 1, compacted integer not null default 0, display_kind text
);
create table state_meta (key text primary key, value text);
create index idx_messages_session on messages(session_id, timestamp);
create index idx_messages_session_id on messages(session_id, id);

create view messages_fts_src as
    select id, case when role = 'tool' then substr(coalesce(content, ''), 1, 8192) else content end
        as content, tool_name, tool_calls
    from messages;
create virtual table messages_fts using fts5(
    content, tool_name, tool_calls, content='messages_fts_src', content_rowid='id'
);
create trigger messages_fts_insert after insert on messages
when (new.id > coalesce((select cast(value as integer) from state_meta
                         where key = 'fts_rebuild_high_water'), -1)
   or new.id <= coalesce((select cast(value as integer) from state_meta
                          where key = 'fts_rebuild_progress'), -1))
begin
    insert into messages_fts(rowid, content, tool_name, tool_calls) values (
        new.id, case when new.role = 'tool' then substr(coalesce(new.content, ''), 1, 8192)
        else new.content end, new.tool_name, new.tool_calls);
end;

create view messages_fts_trigram_src as
    select m.id, m.role, m.content, m.tool_name from messages as m
    join sessions as s on s.id = m.session_id
    where m.role <> 'tool' and s.source not in ('cron', 'subagent');
create virtual table messages_fts_trigram using fts5(
    content, tool_name, content='messages_fts_trigram_src', content_rowid='id', tokenize='trigram'
);
create trigger messages_fts_trigram_insert after insert on messages
when new.role <> 'tool'
   and exists (select 1 from sessions where id = new.session_id and source not in ('cron', 'subagent'))
   and (new.id > coalesce((select cast(value as integer) from state_meta
                           where key = 'fts_rebuild_high_water'), -1)
     or new.id <= coalesce((select cast(value as integer) from state_meta
                            where key = 'fts_rebuild_progress'), -1))
begin
    insert into messages_fts_trigram(rowid, content, tool_name) values (new.id, new.content, new.tool_name);
end;
"""

_SEARCH_SQL = """
    select m.id, m.session_id, m.role,
           snippet(messages_fts, -1, '>>>', '<<<', '...', 40) as snippet,
           m.timestamp, m.tool_name, s.source, s.model, s.started_at as session_started
    from messages_fts
    join messages m on m.id = messages_fts.rowid
    join sessions s on s.id = m.session_id
    where messages_fts match ? and (m.active = 1 or m.compacted = 1)
      and coalesce(m.display_kind, '') <> 'hidden'
    order by rank
    limit ? offset ?
"""
_TRIGRAM_SQL = _SEARCH_SQL.replace("messages_fts", "messages_fts_trigram")
_CONTEXT_SQL = """with target as (
    select session_id, timestamp, id from messages where id in ({ids})
)
select t.id as match_id, m.role, m.content
from target t join messages m on m.id in (
    t.id,
    (select p.id from messages p
     where p.session_id = t.session_id and (p.timestamp, p.id) < (t.timestamp, t.id)
     order by p.timestamp desc, p.id desc limit 1),
    (select n.id from messages n
     where n.session_id = t.session_id and (n.timestamp, n.id) > (t.timestamp, t.id)
     order by n.timestamp, n.id limit 1)
)
order by t.id, m.timestamp, m.id"""

_SPECIAL = re.compile("[" + re.escape("+{}():\"^@/#&|~[]<>,;!?$=\\'") + "]")
_QUOTED = re.compile(r'"[^"]*"')
_CJK = re.compile("[\u4e00-\u9fff\u3400-\u4dbf\u3000-\u30ff\uac00-\ud7af]")


class PeerStore:
    """The peer's state.db: `add` a corpus, then `search` as the peer does."""

    def __init__(self, path: Path) -> None:
        self.db = apsw.Connection(str(path))
        for pragma in ("pragma journal_mode=wal", "pragma synchronous=normal"):
            self.db.execute(pragma).fetchall()
        self.db.execute(SCHEMA)

    def add(
        self, sessions: list[tuple[str, str, float]], messages: list[tuple[str, str, str, float]]
    ) -> None:
        """`sessions`: (id, user_id, started_at); `messages`: (session_id, role, content, timestamp)."""
        with self.db:
            self.db.executemany(
                "insert or ignore into sessions(id, source, user_id, started_at) values (?, 'telegram', ?, ?)",
                sessions,
            )
            self.db.executemany(
                "insert into messages(session_id, role, content, timestamp) values (?, ?, ?, ?)", messages
            )

    def optimize(self) -> None:
        for table in ("messages_fts", "messages_fts_trigram"):
            self.db.execute(f"insert into {table}({table}) values ('optimize')")
        self.db.execute("pragma wal_checkpoint(truncate)").fetchall()

    def search(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        query = sanitize(query)
        if not query:
            return []
        self.db.execute("select 1 from state_meta where key = ? limit 1", ("fts_stale",)).fetchall()
        if _CJK.search(query):
            raise NotImplementedError("the bench's corpus has no CJK text")
        matches = self._rows(_SEARCH_SQL, (query, limit, 0))
        self.db.execute(
            "select key, value from state_meta where key in (?, ?)",
            ("fts_rebuild_high_water", "fts_rebuild_progress"),
        ).fetchall()
        tokens = [t for t in query.strip('"').split() if t.upper() not in ("AND", "OR", "NOT")]
        if not matches and tokens and all(len(t) >= 3 for t in tokens):
            quoted = " ".join('"' + t.replace('"', '""') + '"' for t in tokens)
            matches = self._rows(_TRIGRAM_SQL, (quoted, limit, 0))
        return self._with_context(matches)

    def _rows(self, sql: str, bindings: tuple[object, ...]) -> list[dict[str, Any]]:
        cursor = self.db.execute(sql, bindings)
        names = [name for name, _ in cursor.getdescription()]
        return [dict(zip(names, row)) for row in cursor]

    def _with_context(self, matches: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not matches:
            return matches
        contexts: dict[int, list[dict[str, Any]]] = {match["id"]: [] for match in matches}
        sql = _CONTEXT_SQL.format(ids=",".join("?" for _ in contexts))
        for row in self._rows(sql, tuple(contexts)):
            contexts[row["match_id"]].append(row)
        for match in matches:
            match["context"] = [
                {"role": row["role"], "content": (row["content"] or "")[:200]}
                for row in contexts[match["id"]]
            ]
        return matches


def sanitize(query: str) -> str:
    """The peer's `_sanitize_fts5_query`, for the queries the bench sends (no CJK, no `%`)."""
    query = query[:2048]
    held: list[str] = []

    def hold(match: re.Match[str]) -> str:
        held.append(match.group(0))
        return f"\x00Q{len(held) - 1}\x00"

    text = _QUOTED.sub(hold, query).replace('"', " ")
    text = _SPECIAL.sub(" ", text).replace("%", " ")
    text = re.sub(r"\*+", "*", text)
    text = re.sub(r"(^|\s)\*", r"\1", text)
    text = re.sub(r"(?i)^(AND|OR|NOT)\b\s*", "", text.strip())
    text = re.sub(r"(?i)\s+(AND|OR|NOT)\s*$", "", text.strip())
    text = re.sub(r"\b(\w+(?:[._-]\w+)+)\b", r'"\1"', text)
    for i, quoted in enumerate(held):
        text = text.replace(f"\x00Q{i}\x00", quoted)
    return text.strip()
