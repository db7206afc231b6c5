"""A session's conversation as the model sees it: turns (with tool calls) and summaries.

A session is resumed from its latest summary plus every turn after it. The window never
starts inside a tool exchange: a `tool` message without the assistant message that called
it is not a valid chat for any provider.
"""

from dataclasses import dataclass
import json

import apsw


@dataclass(frozen=True)
class ToolCallRecord:
    id: str
    name: str
    arguments: str  # JSON text, exactly as the model produced it


@dataclass(frozen=True)
class Turn:
    id: int
    role: str
    content: str
    ts: float
    tool_calls: tuple[ToolCallRecord, ...] = ()
    tool_call_id: str | None = None

    def to_chat(self) -> dict:
        """The OpenAI chat-format message for this turn."""
        message: dict = {"role": self.role, "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            message["tool_call_id"] = self.tool_call_id
        return message


@dataclass(frozen=True)
class Summary:
    through_message_id: int
    text: str


def encode_tool_calls(calls: tuple[ToolCallRecord, ...] | list[ToolCallRecord]) -> str | None:
    if not calls:
        return None
    return json.dumps([{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls])


def _decode_tool_calls(text: str | None) -> tuple[ToolCallRecord, ...]:
    if not text:
        return ()
    return tuple(ToolCallRecord(c["id"], c["name"], c["arguments"]) for c in json.loads(text))


def latest_summary(db: apsw.Connection, session_id: int) -> Summary | None:
    row = db.execute(
        "select through_message_id, summary from session_summaries where session_id = ?"
        " order by through_message_id desc limit 1",
        (session_id,),
    ).fetchone()
    return None if row is None else Summary(*row)


def turns_after(db: apsw.Connection, session_id: int, after_id: int, limit: int | None) -> list[Turn]:
    """The session's turns after `after_id`, the newest `limit` of them, oldest first."""
    rows = db.execute(
        "select id, role, content, ts, tool_calls, tool_call_id from messages"
        " where session_id = ? and id > ? order by id desc limit ?",
        (session_id, after_id, -1 if limit is None else limit),
    ).fetchall()
    turns = [
        Turn(id, role, content, ts, _decode_tool_calls(calls), call_id)
        for id, role, content, ts, calls, call_id in reversed(rows)
    ]
    while turns and turns[0].role == "tool":  # cut inside a tool exchange: start after it
        turns.pop(0)
    return turns


def chars_after(db: apsw.Connection, session_id: int, after_id: int) -> int:
    """Characters of the session's turns after `after_id` (a cheap size of the live history)."""
    return db.execute(
        "select coalesce(sum(length(content)), 0) from messages where session_id = ? and id > ?",
        (session_id, after_id),
    ).fetchone()[0]


def add_summary(db: apsw.Connection, session_id: int, through_message_id: int, text: str, now: float) -> None:
    db.execute(
        "insert into session_summaries(session_id, through_message_id, summary, created_at)"
        " values (?, ?, ?, ?)",
        (session_id, through_message_id, text, now),
    )
