"""Who may talk to temper: the per-platform allowlists of the config, plus the people the
operator let in by pairing (memory/access.py).

Anyone else gets one polite reply with a pairing code and nothing more: their messages never
reach the agent, and while their code is live (or a limit holds) further messages get no reply
at all, so a stranger cannot make temper talk.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory import MemoryStore

if TYPE_CHECKING:
    from connectors.config import Config
    from runtime import Inbound


@dataclass(frozen=True)
class PairingPolicy:
    ttl_s: float = 3600.0
    per_user_per_day: int = 3
    max_pending: int = 20


def allowlists(config: Config) -> dict[str, frozenset[str]]:
    """The configured allowlists by platform, ids as text (Telegram's are numbers)."""
    return {
        "telegram": frozenset(str(user) for user in config.telegram.allowed_users),
        "slack": frozenset(config.slack.allowed_users),
    }


class Access:
    def __init__(
        self, store: MemoryStore, allowed: Mapping[str, Iterable[str]], policy: PairingPolicy | None = None
    ) -> None:
        self.store = store
        self.allowed = {platform: frozenset(users) for platform, users in allowed.items()}
        self.policy = policy or PairingPolicy()

    def allows(self, platform: str, user_id: str) -> bool:
        return user_id in self.allowed.get(platform, ()) or self.store.access.has_grant(platform, user_id)

    def pairing_reply(self, inbound: Inbound) -> str | None:
        """The one reply a stranger gets (with a new code), or None when they get none now."""
        code = self.store.access.issue_code(
            inbound.platform,
            inbound.user_id,
            inbound.chat_id,
            inbound.user_name,
            ttl_s=self.policy.ttl_s,
            per_user_per_day=self.policy.per_user_per_day,
            max_pending=self.policy.max_pending,
        )
        if code is None:
            return None
        minutes = round(self.policy.ttl_s / 60)
        return (
            "Hello! I only talk with people my operator has let in, and I don't know you yet.\n"
            f"If they know you, they can let you in by running:\n\n    temper pairing approve {code.display}\n\n"
            f"The code works for {minutes} minutes. Until then I won't answer here; "
            "once you're in, just write again."
        )
