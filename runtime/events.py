"""What a turn yields: typed events that connectors render and tests assert on.

The loop never logs or prints; everything observable about a turn is one of these, in order:

    TurnStarted, then any of ModelCalled / ReplyDelta / ToolCalled / ApprovalRequested /
    ToolReturned, then Replied (or TurnFailed), then Evaluated.

`ApprovalRequested` is the one event that wants an answer: the connector shows the command
and calls `decide(...)`; the tool waits for it (a decision never made counts as declined
after `APPROVAL_TIMEOUT_S`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TurnStarted:
    session_key: str
    episode_id: int


@dataclass(frozen=True)
class ModelCalled:
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    tool_calls: int


@dataclass(frozen=True)
class ReplyDelta:
    """A piece of the reply as the planner streams it."""

    text: str


@dataclass(frozen=True)
class ToolCalled:
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolReturned:
    call_id: str
    name: str
    text: str
    is_error: bool
    duration_s: float


@dataclass
class ApprovalRequested:
    """A command the policy wants a person to approve before it runs."""

    command: str
    reason: str
    rule: str
    decision: asyncio.Future[tuple[bool, bool]] = field(repr=False, compare=False, default=None)  # type: ignore[arg-type]  # the loop sets it

    def decide(self, approved: bool, *, remember: bool = False) -> None:
        """Approve or decline; `remember` allows this rule for the rest of the session."""
        if self.decision is not None and not self.decision.done():
            self.decision.set_result((approved, remember))


@dataclass(frozen=True)
class Replied:
    text: str
    message_id: int
    episode_id: int


@dataclass(frozen=True)
class TurnFailed:
    """The planner could not be reached (after retries and fallbacks); `error` is one line."""

    error: str
    episode_id: int


@dataclass(frozen=True)
class Evaluated:
    episode_id: int
    reward: float | None
    source: str | None  # "verifier", "judge", or None when nothing scored the turn
    reason: str


Event = (
    TurnStarted
    | ModelCalled
    | ReplyDelta
    | ToolCalled
    | ApprovalRequested
    | ToolReturned
    | Replied
    | TurnFailed
    | Evaluated
)
