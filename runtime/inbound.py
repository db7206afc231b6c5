"""One message arriving from a connector, and the session it belongs to."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Inbound:
    """A person's message as a connector received it.

    `user_id` is the platform's id of the sender; `is_group` says whether the chat has other
    people in it (then each person has their own session in it). `verifier` is a check command
    a task may carry: when present, the turn is scored by running it in the sandbox.
    """

    platform: str
    chat_id: str
    user_id: str
    text: str
    thread_id: str = ""
    is_group: bool = False
    platform_message_id: str | None = None
    user_name: str | None = None
    attachments: tuple[str, ...] = field(default_factory=tuple)
    verifier: str | None = None

    @property
    def session_key(self) -> str:
        """platform:chat:thread, plus the user in group chats."""
        key = f"{self.platform}:{self.chat_id}:{self.thread_id}"
        return f"{key}:{self.user_id}" if self.is_group else key

    @property
    def identity(self) -> tuple[str, str]:
        return self.platform, self.user_id
