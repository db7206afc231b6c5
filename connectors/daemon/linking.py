"""`/link` in a chat: one person's accounts on two platforms joined into one user.

    /link           on one account: a one-time code (memory/linking.py), valid `ttl_s`
    /link CODE      on the other account: this account joins the user that asked for the code

Sending the code proves the sender holds both accounts: only the account that asked saw it.
Both accounts have already passed access control (allowlists or pairing) before the dispatcher
hands their messages here. A person should never send a code someone else gave them: the reply
that hands out a code says so, since whoever sends it joins the asker's user (and shares it).
"""

from __future__ import annotations

from memory import LinkError, MemoryStore
from runtime import Inbound

COMMAND = "/link"


def is_link_command(text: str) -> bool:
    """`/link` or `/link@bot`, with or without a code after it."""
    words = text.strip().split(maxsplit=1)
    return bool(words) and words[0].split("@")[0].lower() == COMMAND


def link_reply(store: MemoryStore, inbound: Inbound, ttl_s: float) -> str:
    """The answer to a /link message: a new code, or the outcome of redeeming one."""
    words = inbound.text.strip().split(maxsplit=1)
    if len(words) == 1:
        store.links.ensure_identity(inbound.platform, inbound.user_id, inbound.user_name)
        code = store.links.issue_code(inbound.platform, inbound.user_id, ttl_s=ttl_s)
        if code is None:
            return "You asked for many link codes today; try again tomorrow."
        minutes = max(1, round(ttl_s / 60))
        return (
            "To make your account on another platform the same person to me, send this there within"
            f" {minutes} minutes:\n\n    /link {code.display}\n\n"
            "Both accounts will then share what I know about you and our past conversations. "
            "Never send a code that someone else gave you."
        )
    try:
        report = store.links.redeem(words[1], inbound.platform, inbound.user_id)
    except LinkError as error:
        return f"Not linked: {error}."
    handle = store.user_handle(report.user_id)
    return f"Linked: this account and {handle} are one person to me now; what I know is shared."
