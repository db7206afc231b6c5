"""The `search_memory` tool: the user's own past messages, as dated one-line snippets.

Invariant: the search is always scoped to `context.user`; no argument widens it, so the model
cannot read another user's conversations however it phrases the call.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import Field

from runtime.tools.context import ToolContext

SNIPPET_CHARS = 300


async def search_memory(
    context: ToolContext, query: str, limit: Annotated[int, Field(ge=1, le=20)] = 5
) -> str:
    """Search this user's past conversations."""
    hits = context.require_memory().search(query, user=context.user, limit=limit)
    if not hits:
        return f"No past messages match {query!r}."
    lines = []
    for hit in hits:
        day = datetime.fromtimestamp(hit.ts, tz=UTC).strftime("%Y-%m-%d")
        snippet = " ".join((hit.snippet or hit.content).split())
        if len(snippet) > SNIPPET_CHARS:
            snippet = snippet[: SNIPPET_CHARS - 1] + "…"
        lines.append(f"{day} {hit.role}: {snippet}")
    return "\n".join(lines)
