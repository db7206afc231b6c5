"""A session's conversation as the model sees it: turns (with tool calls) and summaries.

A session is resumed from its latest summary plus every turn after it. The window never
starts inside a tool exchange: a `tool` message without the assistant message that called
it is not a valid chat for any provider.
"""

import json
import time
from dataclasses import dataclass

from .writer import Writer


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


class Conversations:
    """Sessions' turns and summaries in the store's database (`store.conversations`)."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self._db = writer.db

    def load(self, session_id: int, limit: int | None = None) -> tuple[Summary | None, list[Turn]]:
        """The latest summary of the session and the newest `limit` turns after it."""
        summary = self._latest_summary(session_id)
        after = 0 if summary is None else summary.through_message_id
        return summary, self._turns_after(session_id, after, limit)

    def history_chars(self, session_id: int) -> int:
        """Characters of the turns after the session's latest summary (a cheap size of the live
        history)."""
        summary = self._latest_summary(session_id)
        return self._db.execute(
            "select coalesce(sum(length(content)), 0) from messages where session_id = ? and id > ?",
            (session_id, 0 if summary is None else summary.through_message_id),
        ).fetchone()[0]

    def add_summary(self, session_id: int, through_message_id: int, text: str) -> None:
        """Let `text` stand in for the session's turns up to `through_message_id`."""
        with self._writer.writing() as db:
            db.execute(
                "insert into session_summaries(session_id, through_message_id, summary, created_at)"
                " values (?, ?, ?, ?)",
                (session_id, through_message_id, text, time.time()),
            )

    def _latest_summary(self, session_id: int) -> Summary | None:
        row = self._db.execute(
            "select through_message_id, summary from session_summaries where session_id = ?"
            " order by through_message_id desc limit 1",
            (session_id,),
        ).fetchone()
        return None if row is None else Summary(*row)

    def _turns_after(self, session_id: int, after_id: int, limit: int | None) -> list[Turn]:
        """The session's turns after `after_id`, the newest `limit` of them, oldest first."""
        rows = self._db.execute(
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
