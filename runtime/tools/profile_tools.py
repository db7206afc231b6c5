"""The person's say over what temper knows about them: `remember`, `forget_fact`, `profile`.

"Remember that I'm vegetarian", "forget that I live in Paris", "what do you know about me?"
reach memory's facts API (memory/facts.py) through these tools.

Invariant: every tool acts on `context.user`'s facts only; no argument names a user, and a fact
id of another user is "no such fact", so the model cannot read or change another person's
profile however it phrases the call.
"""

from __future__ import annotations

import re
from typing import Literal

from memory import MemoryStore, UnknownRecordError
from runtime.tools.context import ToolContext
from runtime.tools.result import ToolError

Kind = Literal["preference", "biography", "relationship", "plan", "constraint", "other"]
MAX_STATEMENT_CHARS = 300
REMEMBERED_CONFIDENCE = 0.95  # the person said it about themselves, on purpose
_FACT_ID = re.compile(r"#?(\d+)")


async def remember(context: ToolContext, statement: str, kind: Kind = "other") -> str:
    """Save a lasting fact about this user."""
    store, user_id = _user(context)
    if len(statement) > MAX_STATEMENT_CHARS:
        raise ToolError(f"keep the statement under {MAX_STATEMENT_CHARS} characters")
    sources = []
    if context.episode_id is not None:
        request = store.episodes.get(context.episode_id).request_message_id
        if request is not None:
            sources.append(request)
    try:
        change = store.facts.add(
            user_id, statement, kind=kind, sources=sources, confidence=REMEMBERED_CONFIDENCE
        )
    except ValueError as error:
        raise ToolError(str(error)) from None
    if change.action == "merged":
        return f"Already known, noted again: #{change.fact.id} {change.fact.statement}"
    return f"Remembered: #{change.fact.id} {change.fact.statement}"


async def forget_fact(context: ToolContext, fact: str) -> str:
    """Forget a fact about this user (#id or its words)."""
    store, user_id = _user(context)
    if wanted := _FACT_ID.fullmatch(fact.strip()):
        try:
            target = store.facts.get(user_id, int(wanted.group(1)))
        except UnknownRecordError:
            raise ToolError(f"no fact #{wanted.group(1)} about this user; profile lists them") from None
        others = []
    else:
        found = store.facts.search(user_id, fact, limit=4)
        if not found:
            raise ToolError(f"no fact about this user matches {fact!r}; profile lists them")
        target, others = found[0], found[1:]
    store.facts.forget(user_id, target.id)
    text = f"Forgotten: #{target.id} {target.statement}"
    if others:
        text += "\nAlso matching (forget by #id if meant): " + "; ".join(
            f"#{f.id} {f.statement}" for f in others
        )
    return text


async def profile(context: ToolContext) -> str:
    """What you know about this user, with #ids."""
    store, user_id = _user(context)
    facts = store.facts.for_user(user_id)
    if not facts:
        return "Nothing known about this user yet."
    return "\n".join(f"#{fact.id} [{fact.kind}] {fact.statement}" for fact in facts)


def _user(context: ToolContext) -> tuple[MemoryStore, int]:
    store = context.require_memory()
    user_id = store.user_id(context.user)
    if user_id is None:
        raise ToolError("this user has no stored profile yet")
    return store, user_id
