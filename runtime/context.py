"""Building what the planner sees for one turn.

    system prompt + what temper knows about the user + recalled memories + skill index
    + the session's summary (if compacted) + its recent turns (the new message last)

What temper knows about the user is their profile (memory/facts.py `relevant`): the facts the
facts index finds for this request, then the most stable ones, within `profile_tokens`. It is
always the profile of the person speaking: in a group chat each person has their own session.

Only the system prompt and the tool schemas are fixed overhead (`fixed_overhead_tokens`);
everything else is bounded by settings: facts, recalled snippets and history turns are capped.
Recalled memories come from a search of this user's past messages (never other users'),
skipping what is already in the recent turns; when the recent turns hold all of them (a new
user, a short history), there is nothing to recall and no search runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memory import MemoryStore, Turn, profile_line
from runtime import prompts
from runtime.skill_catalog import HEADER as SKILLS_HEADER

RECALL_SPARE = 6
# (request, the recent turns before it) -> the skills to list, as (name, one line)
SkillLines = Callable[[str, list[Turn]], list[tuple[str, str]]]


@dataclass(frozen=True)
class ContextSettings:
    history_turns: int = 40
    recall_limit: int = 3
    profile_tokens: int = 300  # what you know about the user: the most relevant and stable facts
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
    skill_index: list[tuple[str, str]] | SkillLines | None = None,
    now: float | None = None,
) -> list[dict[str, Any]]:
    summary, turns = store.conversations.load(session.id, limit=settings.history_turns)
    sections = [prompts.SYSTEM, f"Today is {_date(now)}."]
    facts = store.facts.relevant(session.user_id, question, settings.profile_tokens)  # the speaker's own
    if facts:
        sections.append("What you know about the user:\n" + "\n".join(profile_line(f) for f in facts))
    recalled = _recall(store, session, question, turns, settings)
    if recalled:
        sections.append("From earlier conversations (may help):\n" + "\n".join(recalled))
    skill_lines = skill_index(question, turns[:-1]) if callable(skill_index) else skill_index
    if skill_lines:  # the few skills relevant to this request (runtime/skill_catalog.py)
        sections.append(SKILLS_HEADER + "\n" + "\n".join(f"- {name}: {line}" for name, line in skill_lines))
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
