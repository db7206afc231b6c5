"""Building what the planner sees for one turn.

    system prompt + what temper knows about the user + recalled memories + skill index
    + the session's summary (if compacted) + its recent turns (the new message last)

Only the system prompt and the tool schemas are fixed overhead (`fixed_overhead_tokens`);
everything else is bounded by settings: facts, recalled snippets and history turns are capped.
Recalled memories come from a search of this user's past messages (never other users'),
skipping what is already in the recent turns; when the recent turns hold all of them (a new
user, a short history), there is nothing to recall and no search runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memory import MemoryStore, Turn
from runtime import prompts

RECALL_SPARE = 6


@dataclass(frozen=True)
class ContextSettings:
    history_turns: int = 40
    recall_limit: int = 3
    max_facts: int = 20
    snippet_chars: int = 240


@dataclass(frozen=True)
class SessionRef:
    """The stored session a turn belongs to."""

    id: int
    key: str
    user_id: int
    user_handle: str


def build_messages(
    store: MemoryStore,
    session: SessionRef,
    question: str,
    settings: ContextSettings,
    skill_index: list[tuple[str, str]] | None = None,
    now: float | None = None,
) -> list[dict[str, Any]]:
    summary, turns = store.conversations.load(session.id, limit=settings.history_turns)
    sections = [prompts.SYSTEM, f"Today is {_date(now)}."]
    facts = store.facts.for_user(session.user_id)[: settings.max_facts]
    if facts:
        sections.append("What you know about the user:\n" + "\n".join(f"- {f.statement}" for f in facts))
    recalled = _recall(store, session, question, turns, settings)
    if recalled:
        sections.append("From earlier conversations (may help):\n" + "\n".join(recalled))
    if skill_index:
        sections.append("Skills:\n" + "\n".join(f"- {name}: {line}" for name, line in skill_index))
    if summary is not None:
        sections.append(f"Earlier in this conversation (summary):\n{summary.text}")
    return [{"role": "system", "content": "\n\n".join(sections)}, *(t.to_chat() for t in turns)]


def _recall(
    store: MemoryStore, session: SessionRef, question: str, turns: list[Turn], settings: ContextSettings
) -> list[str]:
    if settings.recall_limit <= 0 or not question.strip():
        return []
    shown = {turn.id for turn in turns}
    if not store.has_messages_outside(session.user_id, shown):  # a short history: all of it is shown
        return []
    # A few spare hits for those already in the recent turns (the question itself among them).
    hits = store.search(question, user=session.user_handle, limit=settings.recall_limit + RECALL_SPARE)
    lines = []
    for hit in hits:
        if hit.id in shown:
            continue
        snippet = (
            hit.snippet
            if len(hit.snippet) <= settings.snippet_chars
            else hit.snippet[: settings.snippet_chars] + "…"
        )
        lines.append(f"- [{_date(hit.ts)}] {hit.role}: {snippet}")
        if len(lines) == settings.recall_limit:
            break
    return lines


def _date(ts: float | None) -> str:
    moment = datetime.now(UTC) if ts is None else datetime.fromtimestamp(ts, tz=UTC)
    return moment.strftime("%Y-%m-%d")


def fixed_overhead_messages() -> list[dict[str, Any]]:
    """The part of every prompt that does not depend on the user or the session."""
    return [{"role": "system", "content": prompts.SYSTEM + "\n\nToday is 2026-01-01."}]
