"""Compacting a long session before it overflows the context window.

When the turns after the session's latest summary exceed `threshold_chars` (a cheap proxy:
about four characters a token), all but the newest `keep_turns` are summarised by the
planner into a new summary that stands in for them. The summarised messages stay in memory
and stay searchable; only the prompt gets shorter. Runs after the reply, never on its path.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory import MemoryStore, Turn
from runtime import prompts
from runtime.models import ChatModel

RENDERED_TURN_CHARS = 2_000  # a long tool output is cut in what the summariser sees


@dataclass(frozen=True)
class CompactionSettings:
    threshold_chars: int = 48_000  # ~12k tokens of history
    keep_turns: int = 12


async def compact_if_long(
    store: MemoryStore, planner: ChatModel, session_id: int, settings: CompactionSettings
) -> bool:
    """Summarise the session's older turns if its history is long; True if it did."""
    if store.conversations.history_chars(session_id) < settings.threshold_chars:
        return False
    summary, turns = store.conversations.load(session_id)
    older = _older_turns(turns, settings.keep_turns)
    if not older:
        return False
    previous = f"Summary so far:\n{summary.text}\n\n" if summary is not None else ""
    reply = await planner.complete(
        [
            {"role": "system", "content": prompts.COMPACT},
            {"role": "user", "content": previous + "\n".join(_render(turn) for turn in older)},
        ]
    )
    store.conversations.add_summary(session_id, older[-1].id, reply.text.strip())
    return True


def _older_turns(turns: list[Turn], keep: int) -> list[Turn]:
    """Everything before the newest `keep` turns, ending just before a user message, so the
    turns that remain start a whole exchange."""
    cut = max(0, len(turns) - keep)
    while cut > 0 and turns[cut].role != "user":
        cut -= 1
    return turns[:cut]


def _render(turn: Turn) -> str:
    text = (
        turn.content if len(turn.content) <= RENDERED_TURN_CHARS else turn.content[:RENDERED_TURN_CHARS] + "…"
    )
    calls = "".join(f" [called {c.name}({c.arguments[:200]})]" for c in turn.tool_calls)
    return f"{turn.role}: {text}{calls}"
