"""Approvals asked with buttons: an `ApprovalRequested` from a turn becomes a prompt with an
approval id; the `ButtonPress` that names that id decides it.

Only the person whose turn asked may answer. An approval nobody answers within `timeout_s`
is declined. Pending approvals live in memory only, each until it is decided or times out (a
daemon restart re-runs the turn, which asks again); so the table stays as small as the number
of questions actually open.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass

from connectors.channel import ApprovalPrompt, ButtonPress, Channel, ChannelError
from runtime import ApprovalRequested, Inbound

EXPIRED = "That approval has expired or was already answered."
NOT_YOURS = "Only the person who asked me can answer that."


@dataclass(frozen=True)
class _Pending:
    event: ApprovalRequested
    platform: str
    user_id: str


class Approvals:
    def __init__(self, timeout_s: float = 300.0) -> None:
        self.timeout_s = timeout_s
        self._pending: dict[str, _Pending] = {}

    def __len__(self) -> int:
        return len(self._pending)

    async def ask(self, event: ApprovalRequested, inbound: Inbound, channel: Channel) -> str:
        """Show the prompt; the approval id. A prompt the channel cannot show is declined."""
        approval_id = secrets.token_urlsafe(9)
        self._pending[approval_id] = _Pending(event, inbound.platform, inbound.user_id)
        timer = asyncio.get_running_loop().call_later(self.timeout_s, event.decide, False)

        def forget(_: object) -> None:
            timer.cancel()
            self._pending.pop(approval_id, None)

        event.decision.add_done_callback(forget)
        prompt = ApprovalPrompt(inbound.chat_id, inbound.thread_id, approval_id, event.command, event.reason)
        try:
            await channel.ask_approval(prompt)
        except ChannelError:
            event.decide(False)
        return approval_id

    def answer(self, press: ButtonPress) -> str | None:
        """Decide the pending approval the button names; a note for the presser if it cannot."""
        pending = self._pending.get(press.approval_id)
        if pending is None:
            return EXPIRED
        if (press.platform, press.user_id) != (pending.platform, pending.user_id):
            return NOT_YOURS
        pending.event.decide(press.choice in ("yes", "always"), remember=press.choice == "always")
        return None
