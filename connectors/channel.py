"""What every chat platform connector (Telegram, Slack, the CLI's daemon client) offers the
daemon, and what it hands back. The daemon (connectors/daemon/) owns the durable inbox, the
agent and the schedule; a connector only speaks its platform.

Receiving: a connector calls `deliver(item)` for every update it gets (a message, a button
press, a reaction) and acknowledges the update to its platform only after `deliver` returned,
because `deliver` returns once the item is durably written (the inbox, a SQLite table): a crash
after that loses nothing, and a crash before it gets the update again from the platform
(Telegram re-sends un-acknowledged updates; Slack retries events). Duplicates are dropped by
platform message id in the inbox.

Sending: `send` must be idempotent per `idempotency_key` within a process (a retry sends only
what the first call did not); it splits text at the platform's length limit and returns the
platform ids of the messages it sent. Across restarts the daemon's records take over: a reply
recorded as sent is never sent again, and one whose send a crash interrupted is sent again (see
`KnowsSent` below for the one case where that repeats a message).

Errors: a connector raises `ChannelError` (with `retry_after_s` when the platform said so) for
platform failures; the daemon retries with backoff and restarts a connector that keeps failing,
never letting one connector take the others down.

Two optional capabilities (the daemon checks for them with isinstance; a channel without them
works, with the weaker guarantee each names):
- `KnowsSent.find_sent(message)`: the ids of `message` as already sent under its idempotency
  key (Slack: from message metadata; Telegram's Bot API cannot list what a bot sent). The
  daemon asks before re-sending a reply whose send a crash interrupted. Without it, such a reply
  is sent again, and so twice when the crash fell in the window between the platform accepting
  it and the daemon recording that (about 1 ms when idle, a few ms under load: dispatch.py).
- `ReportsStop.wait_stopped()`: returns once receiving ended by `stop()`, and raises what
  ended it otherwise (the poller gave up, a 409 conflict); the daemon then restarts the channel
  with backoff, or, for a fatal ChannelError, reports it failed. Without it, the daemon only
  sees failures of `start` and `send`.

`deliver` must be awaited on the daemon's event loop (a connector whose SDK calls back on
another thread hands the item over with `asyncio.run_coroutine_threadsafe`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from runtime import Inbound


@dataclass(frozen=True)
class ButtonPress:
    """A person pressed an approval button: `approval_id` names the pending approval."""

    platform: str
    chat_id: str
    user_id: str
    approval_id: str
    choice: str  # "yes" | "no" | "always"
    platform_event_id: str


@dataclass(frozen=True)
class Reaction:
    """A thumbs up/down on one of temper's messages: feedback on that answer's episode."""

    platform: str
    chat_id: str
    user_id: str
    message_id: str  # the platform id of the reacted-to message (one temper sent)
    positive: bool
    platform_event_id: str


Delivered = Inbound | ButtonPress | Reaction
Deliver = Callable[[Delivered], Awaitable[None]]


@dataclass(frozen=True)
class Outgoing:
    chat_id: str
    text: str
    thread_id: str = ""
    reply_to: str | None = None  # platform message id being answered
    idempotency_key: str = ""


@dataclass(frozen=True)
class ApprovalPrompt:
    chat_id: str
    thread_id: str
    approval_id: str
    command: str
    reason: str


class ChannelError(Exception):
    """A platform call failed; `retry_after_s` is set when the platform asked to wait."""

    def __init__(self, message: str, *, retry_after_s: float | None = None, fatal: bool = False) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.fatal = fatal  # bad token, revoked app: retrying will not help


class Channel(Protocol):
    platform: str

    async def start(self, deliver: Deliver) -> None:
        """Connect and begin receiving; returns once receiving runs (in background tasks)."""

    async def send(self, message: Outgoing) -> list[str]:
        """Send (split as needed); the platform ids of the messages sent."""

    async def ask_approval(self, prompt: ApprovalPrompt) -> None:
        """Show the command with yes / no / always buttons (inline keyboard, Block Kit)."""

    async def typing(self, chat_id: str, thread_id: str = "") -> None:
        """Show that temper is working (best effort; never raises for platform errors)."""

    async def stop(self) -> None:
        """Stop receiving and close connections; idempotent."""


@runtime_checkable
class KnowsSent(Protocol):
    async def find_sent(self, message: Outgoing) -> list[str] | None:
        """The platform ids of `message` as sent earlier under its idempotency key, or None when
        it was not sent (in full: `send` then sends only what is missing)."""


@runtime_checkable
class ReportsStop(Protocol):
    async def wait_stopped(self) -> None:
        """Return once receiving has ended by `stop()`; raise what ended it otherwise."""
