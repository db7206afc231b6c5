"""What a tool call gives back to the planner, and the errors that become such results.

```
ToolError        a failure the model should see and can act on: bad arguments, a missing file,
                 a path outside the workspace, a refused or declined command. `Toolbox.call`
                 turns it into ToolResult(text="Error: ...", is_error=True).
ToolSetupError   the runtime built a ToolContext without what a tool needs (no sandbox, no
                 memory): a bug in the caller, so it raises like any other exception.
```

Invariant: `bound_text` output is at most `limit` characters plus a one-line marker, and keeps
the head and the tail of the text (where commands print what they did and how they ended).
"""

from __future__ import annotations

from dataclasses import dataclass


class ToolError(Exception):
    """A tool failure that goes back to the model as data ("Error: <message>")."""


class ToolSetupError(RuntimeError):
    """A tool was called with a context that lacks something it needs; a bug, never data."""


@dataclass(frozen=True)
class ToolResult:
    text: str
    is_error: bool = False
    duration_s: float = 0.0
    elided_chars: int = 0  # how much of the tool's output was cut from the middle


def bound_text(text: str, limit: int) -> tuple[str, int]:
    """`text` cut to its first and last `limit // 2` characters; and how many were cut."""
    if len(text) <= limit:
        return text, 0
    head = limit // 2
    tail = limit - head
    elided = len(text) - head - tail
    return f"{text[:head]}\n…[{elided} characters elided]…\n{text[len(text) - tail :]}", elided
