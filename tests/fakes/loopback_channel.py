"""A real `Channel` whose platform is a SQLite file, for tests of the daemon without Telegram or
Slack. The test plays the people (and the platform); the daemon runs the channel, in the same
process or in another one.

    platform = LoopbackPlatform(tmp_path / "platform.db")
    platform.say("ana", "hi")                      # a message from ana in chat "c-ana"; its id
    channel = LoopbackChannel(tmp_path / "platform.db")
    platform.sent()                                # what temper sent, in order

Like Telegram, an update stays on the platform until the channel acknowledges it, which it does
only after `deliver` returned: a channel killed in between gets the update again. Sends store
their idempotency key, which `find_sent` looks up (as Slack message metadata would allow).
`platform.set_down(True)` makes the platform refuse everything: `start` and `send` raise
ChannelError and a running channel's poller stops, which `wait_stopped()` raises.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from connectors.channel import (
    ApprovalPrompt,
    ButtonPress,
    ChannelError,
    Deliver,
    Delivered,
    Outgoing,
    Reaction,
)
from runtime import Inbound

SCHEMA = """
create table if not exists updates (id integer primary key, kind text, payload text, acked integer default 0);
create table if not exists sent (
    id integer primary key, chat_id text, thread_id text, reply_to text, text text, key text, at real);
create table if not exists prompts (id integer primary key, chat_id text, approval_id text, command text);
create table if not exists typing (id integer primary key, chat_id text, at real);
create table if not exists state (down integer);
"""


@dataclass(frozen=True)
class Sent:
    message_id: str
    chat_id: str
    reply_to: str | None
    text: str
    key: str


def _connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=10, isolation_level=None)
    connection.execute("pragma journal_mode=wal")
    connection.executescript(SCHEMA)
    return connection


class LoopbackPlatform:
    """The people's side: what they say, press and react; what temper sent them."""

    def __init__(self, path: Path, platform: str = "loopback") -> None:
        self.path = path
        self.platform = platform
        self.db = _connect(path)

    def _update(self, kind: str, item: Delivered) -> int:
        payload = json.dumps(asdict(item))
        return self.db.execute("insert into updates(kind, payload) values (?, ?)", (kind, payload)).lastrowid

    def say(self, user: str, text: str, *, chat: str | None = None, message_id: str | None = None) -> str:
        """A message from `user` (in their own chat unless `chat`); its platform message id."""
        message_id = message_id or f"in-{time.time_ns()}"
        self._update(
            "message", Inbound(self.platform, chat or f"c-{user}", user, text, platform_message_id=message_id)
        )
        return message_id

    def redeliver(self) -> None:
        """Forget every acknowledgement (a platform that sends its updates again)."""
        self.db.execute("update updates set acked = 0")

    def press(self, user: str, approval_id: str, choice: str, *, chat: str | None = None) -> None:
        event = f"press-{time.time_ns()}"
        self._update(
            "button", ButtonPress(self.platform, chat or f"c-{user}", user, approval_id, choice, event)
        )

    def react(self, user: str, message_id: str, positive: bool, *, chat: str | None = None) -> None:
        event = f"react-{time.time_ns()}"
        self._update(
            "reaction", Reaction(self.platform, chat or f"c-{user}", user, message_id, positive, event)
        )

    def sent(self) -> list[Sent]:
        rows = self.db.execute("select id, chat_id, reply_to, text, key from sent order by id").fetchall()
        return [Sent(f"out-{row[0]}", *row[1:]) for row in rows]

    def prompts(self) -> list[tuple[str, str, str]]:
        """Approval prompts shown: (chat, approval id, command)."""
        return self.db.execute("select chat_id, approval_id, command from prompts order by id").fetchall()

    def typing_count(self) -> int:
        return self.db.execute("select count(*) from typing").fetchone()[0]

    def unacked(self) -> int:
        return self.db.execute("select count(*) from updates where acked = 0").fetchone()[0]

    def set_down(self, down: bool) -> None:
        self.db.execute("delete from state")
        self.db.execute("insert into state values (?)", (int(down),))


class LoopbackChannel:
    def __init__(self, path: Path, platform: str = "loopback", poll_s: float = 0.01) -> None:
        self.path = path
        self.platform = platform
        self.poll_s = poll_s
        self.db: sqlite3.Connection | None = None
        self._poller: asyncio.Task[None] | None = None
        self._ended: asyncio.Future[None] | None = None

    def _platform(self) -> sqlite3.Connection:
        if self.db is None:
            raise ChannelError("the loopback channel is not started")
        if self.db.execute("select down from state").fetchone() in ((1,),):
            raise ChannelError("the loopback platform is down")
        return self.db

    async def start(self, deliver: Deliver) -> None:
        self.db = _connect(self.path)
        self._platform()
        self._ended = asyncio.get_running_loop().create_future()
        self._poller = asyncio.create_task(self._poll(deliver))

    async def _poll(self, deliver: Deliver) -> None:
        try:
            while True:
                rows = (
                    self._platform()
                    .execute("select id, kind, payload from updates where acked = 0 order by id limit 50")
                    .fetchall()
                )
                for update_id, kind, payload in rows:
                    await deliver(_decode(kind, payload))
                    self._platform().execute("update updates set acked = 1 where id = ?", (update_id,))
                await asyncio.sleep(self.poll_s)
        except ChannelError as error:
            if self._ended is not None and not self._ended.done():
                self._ended.set_exception(error)

    async def wait_stopped(self) -> None:
        assert self._ended is not None, "wait_stopped() is for a started channel"
        await asyncio.shield(self._ended)

    async def send(self, message: Outgoing) -> list[str]:
        row = self._platform().execute(
            "insert into sent(chat_id, thread_id, reply_to, text, key, at) values (?, ?, ?, ?, ?, ?)",
            (
                message.chat_id,
                message.thread_id,
                message.reply_to,
                message.text,
                message.idempotency_key,
                time.time(),
            ),
        )
        return [f"out-{row.lastrowid}"]

    async def find_sent(self, message: Outgoing) -> list[str] | None:
        rows = (
            self._platform()
            .execute("select id from sent where key = ? order by id", (message.idempotency_key,))
            .fetchall()
        )
        return [f"out-{row[0]}" for row in rows] or None

    async def ask_approval(self, prompt: ApprovalPrompt) -> None:
        self._platform().execute(
            "insert into prompts(chat_id, approval_id, command) values (?, ?, ?)",
            (prompt.chat_id, prompt.approval_id, prompt.command),
        )

    async def typing(self, chat_id: str, thread_id: str = "") -> None:
        if self.db is not None:
            self.db.execute("insert into typing(chat_id, at) values (?, ?)", (chat_id, time.time()))

    async def stop(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
            self._poller = None
        if self._ended is not None and not self._ended.done():
            self._ended.set_result(None)
        if self.db is not None:
            self.db.close()
            self.db = None


def _decode(kind: str, payload: str) -> Delivered:
    fields = json.loads(payload)
    if kind == "message":
        fields["attachments"] = tuple(fields["attachments"])
        return Inbound(**fields)
    return ButtonPress(**fields) if kind == "button" else Reaction(**fields)
