"""The daemon's side of `deliver`: each delivered item written to the durable inbox before
`deliver` returns, then the dispatcher woken.

An item's identity (the de-duplication key, per platform) and its lane (what it is ordered
with) are decided here:

    Inbound       m:<chat>:<platform message id>   lane: its session key (one session in order)
    ButtonPress   b:<platform event id>            lane: its own (answered at once, even while
    Reaction      r:<platform event id>            the session's turn waits for that button)

An Inbound without a platform message id cannot be de-duplicated and gets a random one.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass

from connectors.channel import ButtonPress, Delivered, Reaction
from memory import InboxItem, MemoryStore
from runtime import Inbound


@dataclass(frozen=True)
class Encoded:
    kind: str
    event_id: str
    lane: str
    payload: str


def encode(item: Delivered) -> Encoded:
    payload = json.dumps(asdict(item), ensure_ascii=False, separators=(",", ":"))
    if isinstance(item, Inbound):
        message_id = (
            item.platform_message_id if item.platform_message_id is not None else f"local-{uuid.uuid4().hex}"
        )
        return Encoded("message", f"m:{item.chat_id}:{message_id}", item.session_key, payload)
    if isinstance(item, ButtonPress):
        return Encoded(
            "button", f"b:{item.platform_event_id}", f"{item.platform}:b:{item.platform_event_id}", payload
        )
    if isinstance(item, Reaction):
        return Encoded(
            "reaction", f"r:{item.platform_event_id}", f"{item.platform}:r:{item.platform_event_id}", payload
        )
    raise TypeError(
        f"cannot deliver a {type(item).__name__}: a channel delivers Inbound, ButtonPress or Reaction"
    )


def decode(item: InboxItem) -> Delivered:
    fields = json.loads(item.payload)
    if item.kind == "message":
        fields["attachments"] = tuple(fields.get("attachments", ()))
        return Inbound(**fields)
    if item.kind == "button":
        return ButtonPress(**fields)
    return Reaction(**fields)


class Inbox:
    """`deliver` for every channel: a durable write, then `on_new(kind)` (which wakes the
    dispatcher) with the new item's kind: "message", "button" or "reaction"."""

    def __init__(self, store: MemoryStore, on_new: Callable[[str], None]) -> None:
        self.store = store
        self.on_new = on_new
        self.duplicates = 0

    async def deliver(self, item: Delivered) -> None:
        encoded = encode(item)
        added = self.store.inbox.add(
            item.platform, encoded.event_id, encoded.kind, encoded.lane, encoded.payload
        )
        if added is None:
            self.duplicates += 1
        else:
            self.on_new(encoded.kind)
