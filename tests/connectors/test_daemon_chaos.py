"""`temper daemon` killed with SIGKILL while 500 messages are in flight on both platforms, then
restarted: every message gets exactly one reply, and each chat's replies come in the order its
messages were written.

The daemon is the real CLI in a child process, reading config.toml and secrets.toml, talking to
the fake Telegram Bot API (long polling), the fake Slack (Socket Mode) and the fake model server,
all in this process; they outlive the daemon as the real services would. Telegram keeps every
update until a getUpdates confirms it; for Slack, the test re-sends the envelopes the dead daemon
never acknowledged, as Slack does.

Matching replies to messages: the model's replies say nothing about the message; they are
numbered by model call, so a reply seen twice tells a resent reply (same text) from a second
turn (new text). Every message a fake platform received must be one the daemon recorded sending
(its `replies` table), for the message that record answers; Telegram's `reply_parameters` must
agree.

The one tolerated repeat is the documented window (connectors/daemon/dispatch.py), on Telegram only: a
crash after the platform accepted a send and before the daemon committed that it was sent.
Telegram cannot be asked what was sent, so the restarted daemon sends the recorded reply again.
Such a repeat is recognised only by all of: the same text in the same chat, the first copy
received before the kill, the record made before the kill and marked sent after the restart as
the second copy. Slack can be asked (its replies carry their key as message metadata), so on
Slack there is no such repeat. Any other repeat, a second turn, a lost message or a reply out of
order fails.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memory import MemoryStore
from tests.fakes import slack_wire
from tests.fakes.daemon_process import DaemonProcess, write_config
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.slack_server import FakeSlack
from tests.fakes.telegram_server import FakeTelegram

pytestmark = pytest.mark.anyio

PEOPLE = 50  # on each platform, each in their own private chat / DM
PER_PERSON = 5  # 2 platforms x 50 people x 5 = 500 messages
MESSAGES = 2 * PEOPLE * PER_PERSON
CONCURRENCY = 8
TELEGRAM_CHATS = [str(70_000 + n) for n in range(PEOPLE)]  # a private chat's id is its person's id
SLACK_PEOPLE = [f"U{n:05d}" for n in range(PEOPLE)]
SLACK_DMS = [f"D{n:05d}" for n in range(PEOPLE)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def model() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        for n in range(MESSAGES + 300):  # and the turns a kill cuts short, asked again
            fake.enqueue(text=f"answer {n:04d}")
        yield fake


@dataclass(frozen=True)
class Received:
    """A message a fake platform received from the daemon."""

    platform: str
    chat: str
    message_id: str  # as the daemon records it: "<chat>:<id>" (Telegram), "<channel>:<ts>" (Slack)
    text: str
    before_kill: bool
    reply_to: str | None = None  # what the platform itself says it answers (Telegram)


@dataclass(frozen=True)
class Record:
    """A reply as the daemon recorded it."""

    platform: str
    chat: str
    reply_to: str
    text: str
    created_at: float
    sent_at: float | None
    sent_as: tuple[str, ...]


@pytest.mark.slow
async def test_sigkill_with_500_messages_in_flight_then_each_gets_exactly_one_reply(
    tmp_path: Path, model: FakeOpenAI
) -> None:
    started = time.monotonic()
    async with FakeSlack() as slack:
        with FakeTelegram() as telegram:
            folder = write_config(
                tmp_path, model=model, telegram=telegram, slack=slack, telegram_users=[int(c) for c in TELEGRAM_CHATS],
                slack_users=SLACK_PEOPLE, daemon={"concurrency": CONCURRENCY},
            )  # fmt: skip
            daemon = DaemonProcess(folder)
            try:
                daemon.start()
                await until(daemon, lambda: telegram.offsets and slack.live_sockets(), "both channels up")
                asked = await write_500_messages(telegram, slack)
                await until(
                    daemon,
                    lambda: len(telegram.sent) + len(slack.posted) >= MESSAGES // 3,
                    "a third answered",
                )
                daemon.kill()
                killed_at = time.time()
                await asyncio.sleep(0.3)  # requests the fakes had read in full before the kill land
                at_kill = (len(telegram.sent), len(slack.posted))
                assert max(at_kill) < MESSAGES // 2, (
                    f"the kill came too late to test anything: {at_kill} answered"
                )

                restarted_at = time.time()
                daemon.start()
                await until(
                    daemon, lambda: slack.connections == 2 and slack.live_sockets(), "Slack reconnected"
                )
                for envelope in list(slack.envelopes):  # what the dead daemon never acknowledged
                    if envelope["envelope_id"] not in slack.acks:
                        await slack.redeliver(envelope["envelope_id"])
                await until(daemon, lambda: len(replies_seen(telegram, slack)) >= MESSAGES, "all answered")
                await asyncio.sleep(0.5)  # a repeated reply, if there were one, has time to arrive
                assert await asyncio.to_thread(daemon.stop) == 0, daemon.log_tail()
            finally:
                daemon.close()

    received = telegram_received(telegram.sent, at_kill[0]) + slack_received(slack.posted, at_kill[1])
    records = recorded_replies(daemon.db_path)
    repeats = crash_window_repeats(received, records, killed_at, restarted_at)
    assert len(repeats) <= CONCURRENCY, repeats  # at most the sends in flight when it died
    assert [r for r in repeats if r.platform == "slack"] == []  # found by find_sent, not resent
    assert answered_in_order([r for r in received if r not in repeats], records) == asked
    with MemoryStore.open(daemon.db_path) as store:
        inbox = dict(store.db.execute("select status, count(*) from inbox group by status").fetchall())
    assert inbox == {"done": MESSAGES}
    assert model.unanswered == []
    print(
        f"\nkilled with {at_kill[0]} Telegram and {at_kill[1]} Slack replies sent; "
        f"{len(repeats)} resent from the crash window; {time.monotonic() - started:.1f} s"
    )


def replies_seen(telegram: FakeTelegram, slack: FakeSlack) -> set[str]:
    """The distinct replies the platforms received (a model reply's text is unique)."""
    return {sent["text"] for sent in telegram.sent} | {post["text"] for post in slack.posted}


async def until(
    daemon: DaemonProcess, condition: Callable[[], object], what: str, timeout_s: float = 90.0
) -> None:
    await asyncio.to_thread(daemon.wait_for, condition, timeout_s, what)


async def write_500_messages(telegram: FakeTelegram, slack: FakeSlack) -> dict[str, list[str]]:
    """Everyone writes PER_PERSON messages; per chat, the ids of the messages written, in order
    (as the daemon records what a reply answers). Telegram's are all queued first: the daemon
    takes them in batches of 100 from getUpdates, more slowly than Slack's arrive."""
    asked: dict[str, list[str]] = defaultdict(list)
    for turn in range(PER_PERSON):
        for n, chat in enumerate(TELEGRAM_CHATS):
            update = telegram.message(f"telegram person {n}, message {turn}", chat_id=int(chat))
            asked[chat].append(f"{chat}:{update['message']['message_id']}")
    for turn in range(PER_PERSON):
        for n, (person, dm) in enumerate(zip(SLACK_PEOPLE, SLACK_DMS, strict=True)):
            event = slack_wire.message(f"slack person {n}, message {turn}", channel=dm, user=person)
            await slack.push_event(event)
            asked[dm].append(f"{dm}:{event['ts']}")
    return dict(asked)


def telegram_received(sent: list[dict[str, Any]], before_kill: int) -> list[Received]:
    return [
        Received(
            "telegram",
            str(message["chat_id"]),
            f"{message['chat_id']}:{message['message_id']}",
            message["text"],
            index < before_kill,
            f"{message['chat_id']}:{message['reply_parameters']['message_id']}",
        )
        for index, message in enumerate(sent)
    ]


def slack_received(posted: list[dict[str, Any]], before_kill: int) -> list[Received]:
    return [
        Received(
            "slack", post["channel"], f"{post['channel']}:{post['ts']}", post["text"], index < before_kill
        )
        for index, post in enumerate(posted)
    ]


def recorded_replies(db_path: Path) -> list[Record]:
    with MemoryStore.open(db_path) as store:
        rows = store.db.execute(
            "select platform, chat_id, reply_to, text, created_at, sent_at, platform_ids from replies"
        ).fetchall()
    return [Record(*row[:6], tuple(json.loads(row[6] or "[]"))) for row in rows]


def crash_window_repeats(
    received: list[Received], records: list[Record], killed_at: float, restarted_at: float
) -> list[Received]:
    """The first copies of replies sent twice because the kill fell between the platform
    accepting the send and the daemon's commit (see the module docstring)."""
    repeats = []
    for record in records:
        if not (
            record.created_at < killed_at and record.sent_at is not None and record.sent_at > restarted_at
        ):
            continue
        copies = [
            r for r in received if (r.platform, r.chat, r.text) == (record.platform, record.chat, record.text)
        ]
        if len(copies) == 2 and copies[0].before_kill and not copies[1].before_kill:
            if copies[1].message_id in record.sent_as and copies[0].message_id not in record.sent_as:
                repeats.append(copies[0])
    return repeats


def answered_in_order(received: list[Received], records: list[Record]) -> dict[str, list[str]]:
    """Per chat, the message each received reply answers, in the order they arrived; every
    received message must be one the daemon recorded sending."""
    answers = {message_id: record.reply_to for record in records for message_id in record.sent_as}
    unrecorded = [r for r in received if r.message_id not in answers]
    assert unrecorded == [], f"messages the daemon has no record of sending: {unrecorded[:3]}"
    disagree = [r for r in received if r.reply_to is not None and r.reply_to != answers[r.message_id]]
    assert disagree == [], f"replies that answer another message than recorded: {disagree[:3]}"
    in_order: dict[str, list[str]] = defaultdict(list)
    for reply in received:
        in_order[reply.chat].append(answers[reply.message_id])
    return dict(in_order)
