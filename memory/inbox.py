"""The daemon's durable inbox, and the replies it sends: what arrived, and what was answered.

Invariants:
- An item is stored once per (platform, event_id); a platform that delivers an update again
  finds it already there (`add` returns None).
- Items of one lane (a session) are handed out oldest first and only as the lane's head: the
  next item of a lane waits until the one before it is finished, deferred items included.
- An item has at most one reply. The reply is stored (the intent) before it is sent; `mark_sent`
  stores the platform ids of what was sent and finishes the item in one transaction, so an item
  is `done` exactly when its reply is known to be sent.
- Finished items (and their replies and sent-message ids, by cascade) are kept for a retention
  period and then pruned: the inbox stays small.

Payloads are opaque text here (connectors/daemon/inbox.py encodes them): memory/ knows nothing of
platforms.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection
from dataclasses import dataclass

from .writer import Writer

KINDS = ("message", "button", "reaction")
FINISHED = ("done", "dropped", "failed")


@dataclass(frozen=True)
class InboxItem:
    id: int
    platform: str
    event_id: str
    kind: str
    lane: str
    payload: str
    attempts: int
    received_at: float


@dataclass(frozen=True)
class Reply:
    """A reply to one inbox item: an intent until `sent_at` is set."""

    id: int
    inbox_id: int
    platform: str
    chat_id: str
    thread_id: str
    reply_to: str | None
    text: str
    episode_id: int | None
    sent_at: float | None

    @property
    def idempotency_key(self) -> str:
        return f"temper-reply-{self.id}"


@dataclass(frozen=True)
class InboxDepth:
    pending: int
    failed: int
    oldest_pending_at: float | None


_ITEM = "i.id, i.platform, i.event_id, i.kind, i.lane, i.payload, i.attempts, i.received_at"
_REPLY = "id, inbox_id, platform, chat_id, thread_id, reply_to, text, episode_id, sent_at"


class Inbox:
    """The inbox and reply tables of the store's database (`store.inbox`)."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self._db = writer.db

    def add(self, platform: str, event_id: str, kind: str, lane: str, payload: str) -> int | None:
        """Store a delivered item durably; its id, or None when (platform, event_id) is already stored."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
        with self._writer.writing() as db:
            db.execute(
                "insert into inbox(platform, event_id, kind, lane, payload, received_at) values (?, ?, ?, ?, ?, ?)"
                " on conflict(platform, event_id) do nothing",
                (platform, event_id, kind, lane, payload, time.time()),
            )
            return db.last_insert_rowid() if db.changes() else None

    def heads(
        self, *, kinds: Collection[str], platforms: Collection[str], busy_lanes: Collection[str], limit: int
    ) -> list[InboxItem]:
        """The oldest pending item of each lane that is due, not busy, of `kinds` and `platforms`.

        Pending items of `kinds` are read oldest first (index inbox_pending_kind), each kept if no
        older pending item shares its lane (index inbox_pending), until `limit` are found: the cost
        follows the items handed out, not the length of the backlog."""
        if limit <= 0 or not kinds or not platforms:
            return []
        kind_marks = ", ".join("?" * len(kinds))
        platform_marks = ", ".join("?" * len(platforms))
        rows = self._db.execute(
            f"select {_ITEM} from inbox i"
            f" where i.status = 'pending' and i.kind in ({kind_marks})"
            f" and +i.platform in ({platform_marks})"  # `+`: not the (platform, event_id) index
            f" and i.retry_at <= ?"
            f" and not exists (select 1 from inbox e where e.lane = i.lane and e.status = 'pending' and e.id < i.id)"
            f" order by i.id limit ?",
            (*kinds, *platforms, time.time(), limit + len(busy_lanes)),
        ).fetchall()
        items = [InboxItem(*row) for row in rows if row[4] not in busy_lanes]
        return items[:limit]

    def next_due(self) -> float | None:
        """When the earliest deferred pending item becomes due (None when none waits)."""
        return self._db.execute(
            "select min(retry_at) from inbox where status = 'pending' and retry_at > 0"
        ).fetchone()[0]

    def defer(self, item_id: int, delay_s: float, error: str, max_attempts: int) -> bool:
        """Count a failed attempt and make the item due again after `delay_s`; after `max_attempts`
        attempts it is finished as `failed` instead. True when it failed for good."""
        with self._writer.writing() as db:
            now = time.time()
            row = db.execute(
                "select attempts from inbox where id = ? and status = 'pending'", (item_id,)
            ).fetchone()
            if row is None:  # finished meanwhile (its reply went out before the failure): leave it be
                return False
            attempts = row[0] + 1
            if attempts >= max_attempts:
                db.execute(
                    "update inbox set attempts = ?, error = ?, status = 'failed', finished_at = ? where id = ?",
                    (attempts, error, now, item_id),
                )
                return True
            db.execute(
                "update inbox set attempts = ?, error = ?, retry_at = ? where id = ?",
                (attempts, error, now + delay_s, item_id),
            )
            return False

    def finish(self, item_id: int, status: str) -> None:
        """Finish an item that needs no reply: `done`, `dropped` or `failed`. A `dropped` one (a
        stranger's message) keeps no payload: their words are not stored anywhere."""
        if status not in FINISHED:
            raise ValueError(f"status must be one of {', '.join(FINISHED)}; got {status!r}")
        with self._writer.writing() as db:
            db.execute(
                "update inbox set status = ?, finished_at = ?,"
                " payload = case when ? = 'dropped' then '' else payload end where id = ?",
                (status, time.time(), status, item_id),
            )

    def add_reply(
        self, inbox_id: int, *, platform: str, chat_id: str, thread_id: str, reply_to: str | None, text: str,
        episode_id: int | None,
    ) -> Reply:  # fmt: skip
        """Record the intent to send `text` for the item; the stored reply if one exists already."""
        with self._writer.writing() as db:
            db.execute(
                "insert into replies(inbox_id, platform, chat_id, thread_id, reply_to, text, episode_id, created_at)"
                " values (?, ?, ?, ?, ?, ?, ?, ?) on conflict(inbox_id) do nothing",
                (inbox_id, platform, chat_id, thread_id, reply_to, text, episode_id, time.time()),
            )
            found = self.reply_for(inbox_id)
        assert found is not None  # inserted above, or there already
        return found

    def reply_for(self, inbox_id: int) -> Reply | None:
        row = self._db.execute(f"select {_REPLY} from replies where inbox_id = ?", (inbox_id,)).fetchone()
        return None if row is None else Reply(*row)

    def mark_sent(self, reply: Reply, platform_ids: list[str], item_status: str = "done") -> None:
        """The reply reached the platform as `platform_ids`: remember them (for reactions) and
        finish its item, all in one transaction."""
        with self._writer.writing() as db:
            db.execute(
                "update replies set sent_at = ?, platform_ids = ? where id = ?",
                (time.time(), json.dumps(platform_ids), reply.id),
            )
            db.executemany(
                "insert into sent_messages(platform, chat_id, message_id, reply_id, episode_id) values (?, ?, ?, ?, ?)"
                " on conflict do nothing",
                [
                    (reply.platform, reply.chat_id, message_id, reply.id, reply.episode_id)
                    for message_id in platform_ids
                ],
            )
            self.finish(reply.inbox_id, item_status)

    def episode_for_sent_message(self, platform: str, chat_id: str, message_id: str) -> int | None:
        """The episode whose reply was sent as this platform message (None if unknown or pruned)."""
        row = self._db.execute(
            "select episode_id from sent_messages where platform = ? and chat_id = ? and message_id = ?",
            (platform, chat_id, message_id),
        ).fetchone()
        return None if row is None else row[0]

    def depth(self) -> InboxDepth:
        pending, oldest = self._db.execute(
            "select count(*), min(received_at) from inbox where status = 'pending'"
        ).fetchone()
        failed = self._db.execute("select count(*) from inbox where status = 'failed'").fetchone()[0]
        return InboxDepth(pending, failed, oldest)

    def prune(self, older_than_s: float) -> int:
        """Delete items finished more than `older_than_s` ago (their replies and sent ids go with
        them); how many."""
        with self._writer.writing() as db:
            before = time.time() - older_than_s
            db.execute("delete from inbox where status != 'pending' and finished_at < ?", (before,))
            return db.changes()
