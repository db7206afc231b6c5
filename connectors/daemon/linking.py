"""`/link` in a chat: one person's accounts on two platforms joined into one user.

    /link           on one account: a one-time code (memory/linking.py), valid `ttl_s`
    /link CODE      on the other account: this account joins the user that asked for the code;
                    with `[users] link_approval = "operator"` it asks to, and the operator
                    decides (`temper users approve|deny ID`) within the code's TTL
    /link status    whether this account's latest request was approved, denied or expired

The person is not told of the operator's decision unprompted (a reply outside a message's
exactly-once path could be lost or doubled): the request's reply says to send /link status,
and once approved their next message simply finds the two accounts linked.

Sending the code proves the sender holds both accounts: only the account that asked saw it.
Both accounts have already passed access control (allowlists or pairing) before the dispatcher
hands their messages here. A person should never send a code someone else gave them: the reply
that hands out a code says so, since whoever sends it joins the asker's user (and shares it).
"""

from __future__ import annotations

from typing import Literal

from memory import LinkError, MemoryStore
from runtime import Inbound

COMMAND = "/link"
STATUS = "status"
LinkApproval = Literal["none", "operator"]


def is_link_command(text: str) -> bool:
    """`/link` or `/link@bot`, with or without a code after it."""
    words = text.strip().split(maxsplit=1)
    return bool(words) and words[0].split("@")[0].lower() == COMMAND


def link_reply(store: MemoryStore, inbound: Inbound, ttl_s: float, approval: LinkApproval = "none") -> str:
    """The answer to a /link message: a new code, the outcome of redeeming one (or of asking
    the operator to), or the state of this account's request."""
    words = inbound.text.strip().split(maxsplit=1)
    if len(words) == 2 and words[1].strip().lower() == STATUS:
        return _status_reply(store, inbound)
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
            + (" The operator will be asked to approve the link." if approval == "operator" else "")
        )
    if approval == "operator":
        return _request_reply(store, inbound, words[1])
    try:
        report = store.links.redeem(words[1], inbound.platform, inbound.user_id)
    except LinkError as error:
        return f"Not linked: {error}."
    handle = store.user_handle(report.user_id)
    return f"Linked: this account and {handle} are one person to me now; what I know is shared."


def _request_reply(store: MemoryStore, inbound: Inbound, code: str) -> str:
    try:
        request = store.links.request(code, inbound.platform, inbound.user_id, inbound.user_name)
    except LinkError as error:
        return f"Not linked: {error}."
    minutes = max(1, round((request.expires_at - request.created_at) / 60))
    return (
        f"Asked: the operator must approve joining this account to {request.user_handle} (request"
        f" #{request.id}, open for {minutes} minutes). Send /link status to see whether it was."
    )


def _status_reply(store: MemoryStore, inbound: Inbound) -> str:
    request = store.links.latest_request(inbound.platform, inbound.user_id)
    if request is None:
        return "This account has no link request: send /link CODE with a code from your other account."
    state = request.state()
    if state == "approved":
        return f"Linked: the operator approved it; this account and {request.user_handle} are one person now."
    if state == "denied":
        return f"Not linked: the operator denied request #{request.id}."
    if state == "expired":
        return f"Not linked: request #{request.id} expired; send /link on your other account for a new code."
    return f"Request #{request.id} is waiting for the operator's approval."
