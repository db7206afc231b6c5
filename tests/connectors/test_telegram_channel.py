"""The Telegram channel against a fake Bot API on 127.0.0.1: the real python-telegram-bot
client, real HTTP, real files. Assertions are on what the channel delivered and on what the fake
Telegram server received."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from connectors.channel import (
    ApprovalPrompt,
    ButtonPress,
    ChannelError,
    Delivered,
    Outgoing,
    Reaction,
)
from connectors.telegram.channel import TelegramChannel
from runtime import Inbound
from tests.fakes.telegram_server import FakeTelegram

pytestmark = [
    pytest.mark.anyio,
    # python-telegram-bot warns about its own RetryAfter when it builds one; not ours to fix
    pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning"),
]


class Inbox:
    """The daemon's side of `deliver`: keeps what arrives; `failures` makes the next calls fail."""

    def __init__(self) -> None:
        self.items: list[Delivered] = []
        self.failures = 0

    async def deliver(self, item: Delivered) -> None:
        if self.failures:
            self.failures -= 1
            raise OSError("database is locked")
        self.items.append(item)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
def inbox() -> Inbox:
    return Inbox()


def make_channel(telegram: FakeTelegram, tmp_path: Path, **options) -> TelegramChannel:
    return TelegramChannel(telegram.token, base_url=telegram.url, workspace_dir=tmp_path / "files", **options)


@pytest.fixture
async def channel(telegram: FakeTelegram, inbox: Inbox, tmp_path: Path) -> AsyncIterator[TelegramChannel]:
    started = make_channel(telegram, tmp_path)
    await started.start(inbox.deliver)
    yield started
    await started.stop()


async def received(telegram: FakeTelegram, inbox: Inbox, count: int = 1) -> list[Delivered]:
    await telegram.wait_until(lambda: len(inbox.items) >= count)
    return inbox.items


# Private chats ---------------------------------------------------------------------------


async def test_a_private_message_is_delivered_answered_and_acknowledged(
    channel: TelegramChannel, telegram: FakeTelegram, inbox: Inbox
) -> None:
    update = telegram.message("what is 2+2?", chat_id=77, username="ana")
    [inbound] = await received(telegram, inbox)
    assert inbound == Inbound(
        platform="telegram",
        chat_id="77",
        user_id="77",
        text="what is 2+2?",
        platform_message_id="77:1",
        user_name="ana",
    )
    await channel.typing("77")
    ids = await channel.send(Outgoing(chat_id="77", text="**4**", reply_to=inbound.platform_message_id))
    assert ids == ["77:2"]
    assert telegram.actions == [{"chat_id": 77, "action": "typing"}]
    [sent] = telegram.sent
    assert (sent["chat_id"], sent["text"]) == (77, "4")
    assert sent["entities"] == [{"type": "bold", "offset": 0, "length": 1}]
    assert sent["reply_parameters"] == {"message_id": 1, "allow_sending_without_reply": True}
    await telegram.wait_until(lambda: update["update_id"] + 1 in telegram.offsets)
    assert telegram.pending() == []


async def test_commands_arrive_as_text(
    channel: TelegramChannel, telegram: FakeTelegram, inbox: Inbox
) -> None:
    for command in ("/start", "/help", "/new", "/good", "/bad@temper_test_bot"):
        telegram.message(command)
    items = await received(telegram, inbox, 5)
    assert [item.text for item in items] == ["/start", "/help", "/new", "/good", "/bad"]


async def test_a_long_reply_is_split_and_sent_once_per_idempotency_key(
    channel: TelegramChannel, telegram: FakeTelegram
) -> None:
    paragraphs = [f"Paragraph {n}: " + "lorem ipsum " * 150 for n in range(6)]  # ~1800 each
    reply = Outgoing(chat_id="5", text="\n\n".join(paragraphs), idempotency_key="turn-1")
    ids = await channel.send(reply)
    assert len(ids) == 3 and len(set(ids)) == 3
    texts = [sent["text"] for sent in telegram.sent]
    assert all(len(text) <= 4096 for text in texts)
    assert texts == ["\n\n".join(paragraphs[n : n + 2]).strip() for n in (0, 2, 4)]
    assert await channel.send(reply) == ids  # a retry after a crash-free success sends nothing
    assert len(telegram.sent) == 3


async def test_a_send_that_failed_midway_resumes_where_it_stopped(
    channel: TelegramChannel, telegram: FakeTelegram
) -> None:
    reply = Outgoing(chat_id="5", text="\n\n".join(["x " * 1500] * 3), idempotency_key="turn-2")
    telegram.fail("sendMessage", 403, after=1)  # the second of three pieces is refused
    with pytest.raises(ChannelError, match="blocked by the user") as caught:
        await channel.send(reply)
    assert not caught.value.fatal and len(telegram.sent) == 1
    ids = await channel.send(reply)
    assert ids == [f"5:{sent['message_id']}" for sent in telegram.sent]
    assert len(ids) == 3


async def test_refused_formatting_falls_back_to_plain_text(
    channel: TelegramChannel, telegram: FakeTelegram
) -> None:
    telegram.fail("sendMessage", 400, "Bad Request: can't parse entities: unsupported start tag")
    assert await channel.send(Outgoing(chat_id="5", text="**hi**"))
    assert telegram.sent == [{"chat_id": 5, "text": "hi", "message_id": 1}]


# Groups and topics -----------------------------------------------------------------------


async def test_in_groups_only_messages_for_the_bot_are_delivered(
    channel: TelegramChannel, telegram: FakeTelegram, inbox: Inbox
) -> None:
    group = -100123
    telegram.message("chatting among ourselves", chat_id=group, user_id=1, group=True)
    telegram.message("/new@other_bot", chat_id=group, user_id=1, group=True)
    telegram.message("@temper_test_bot  summarise the thread", chat_id=group, user_id=1, group=True)
    [answer] = await channel.send(Outgoing(chat_id=str(group), text="Here is the summary."))
    answer_id = int(answer.split(":")[1])
    telegram.message(
        "thanks, and the numbers?",
        chat_id=group,
        user_id=2,
        username="bo",
        group=True,
        reply_to=answer_id,
    )
    telegram.message("/good@temper_test_bot", chat_id=group, user_id=2, group=True)
    telegram.message("nobody asked you", chat_id=group, user_id=2, group=True, reply_to=1)
    items = await received(telegram, inbox, 3)
    await telegram.wait_until(lambda: telegram.pending() == [])  # the ignored ones are acked too
    assert [(i.text, i.user_id, i.is_group) for i in items] == [
        ("summarise the thread", "1", True),
        ("thanks, and the numbers?", "2", True),
        ("/good", "2", True),
    ]
    assert items[0].session_key == f"telegram:{group}::1"


async def test_forum_topics_are_threads(
    channel: TelegramChannel, telegram: FakeTelegram, inbox: Inbox
) -> None:
    telegram.message("@temper_test_bot deploy status?", chat_id=-1009, user_id=3, thread_id=42)
    [inbound] = await received(telegram, inbox)
    assert (inbound.thread_id, inbound.session_key) == ("42", "telegram:-1009:42:3")
    await channel.typing(inbound.chat_id, inbound.thread_id)
    await channel.send(Outgoing(chat_id=inbound.chat_id, thread_id=inbound.thread_id, text="green"))
    assert telegram.sent[0]["message_thread_id"] == 42
    assert telegram.actions[0]["message_thread_id"] == 42


# Files -----------------------------------------------------------------------------------


async def test_documents_and_photos_land_in_the_workspace(
    channel: TelegramChannel, telegram: FakeTelegram, inbox: Inbox, tmp_path: Path
) -> None:
    telegram.message("please review", chat_id=8, document=("../../report v2.csv", b"a,b\n1,2\n"))
    telegram.message(chat_id=8, photo=b"\xff\xd8 a big photo")
    document, photo = await received(telegram, inbox, 2)
    assert document.text == "please review"
    assert [Path(p).read_bytes() for p in document.attachments] == [b"a,b\n1,2\n"]
    assert document.attachments == (str(tmp_path / "files" / "8" / "1-report_v2.csv"),)
    assert [Path(p).read_bytes() for p in photo.attachments] == [b"\xff\xd8 a big photo"]  # largest size
    assert photo.text == ""
    telegram.fail("getFile", 400, "Bad Request: file is too big")
    telegram.message("and this one", chat_id=8, document=("huge.iso", b"..."))
    *_, refused = await received(telegram, inbox, 3)
    assert (refused.text, refused.attachments) == (
        "and this one\n[huge.iso could not be downloaded: File is too big]",
        (),
    )


# Approvals and reactions -----------------------------------------------------------------


async def test_approval_buttons_deliver_the_choice_and_answer_the_press(
    channel: TelegramChannel, telegram: FakeTelegram, inbox: Inbox
) -> None:
    await channel.ask_approval(
        ApprovalPrompt(
            chat_id="9",
            thread_id="",
            approval_id="ap-17",
            command="rm -rf build/",
            reason="deletes files",
        )
    )
    [question] = telegram.sent
    buttons = question["reply_markup"]["inline_keyboard"][0]
    assert [(b["text"], b["callback_data"]) for b in buttons] == [
        ("Yes", "yes:ap-17"),
        ("Always", "always:ap-17"),
        ("No", "no:ap-17"),
    ]
    assert question["text"].startswith("temper wants to run:\n\nrm -rf build/")
    update = telegram.callback("always:ap-17", message_id=question["message_id"], chat_id=9)
    [press] = await received(telegram, inbox)
    assert press == ButtonPress(
        platform="telegram",
        chat_id="9",
        user_id="9",
        approval_id="ap-17",
        choice="always",
        platform_event_id=f"callback:{update['callback_query']['id']}",
    )
    await telegram.wait_until(lambda: telegram.edits)
    assert telegram.answers == [
        {"callback_query_id": update["callback_query"]["id"], "text": "Approved (always)"}
    ]
    assert telegram.edits[0]["text"].endswith("Approved (always) by @alice")
    assert "reply_markup" not in telegram.edits[0]  # the buttons are gone


async def test_thumbs_on_an_answer_are_reactions(
    channel: TelegramChannel, telegram: FakeTelegram, inbox: Inbox
) -> None:
    [answer] = await channel.send(Outgoing(chat_id="4", text="done"))
    message_id = int(answer.split(":")[1])
    telegram.reaction(message_id, "👍", chat_id=4)
    telegram.reaction(message_id, "🎉", chat_id=4)  # not feedback
    telegram.reaction(message_id, "👎", chat_id=4, old="👍")
    up, down = await received(telegram, inbox, 2)
    assert isinstance(up, Reaction) and isinstance(down, Reaction)
    assert (up.message_id, up.positive, down.positive) == (answer, True, False)
    assert up.platform_event_id != down.platform_event_id


# Platform errors -------------------------------------------------------------------------


async def test_flood_control_is_waited_out(channel: TelegramChannel, telegram: FakeTelegram) -> None:
    telegram.fail("sendMessage", 429, retry_after=1)
    started = time.monotonic()
    assert await channel.send(Outgoing(chat_id="3", text="hello"))
    assert time.monotonic() - started >= 1.0
    assert [s["text"] for s in telegram.sent] == ["hello"]
    assert telegram.calls.count("sendMessage") == 2


async def test_a_second_poller_on_the_same_token_is_a_clear_fatal_error(
    channel: TelegramChannel, telegram: FakeTelegram, inbox: Inbox, tmp_path: Path
) -> None:
    await telegram.wait_until(lambda: telegram.calls.count("getUpdates") >= 1)
    second = make_channel(telegram, tmp_path)
    await second.start(Inbox().deliver)
    try:
        with pytest.raises(ChannelError, match="Another program") as caught:
            await asyncio.wait_for(channel.wait_stopped(), 5)
        assert caught.value.fatal
        await channel.stop()  # and leaves the second one alone
        telegram.message("for the second one")
        await telegram.wait_until(lambda: telegram.pending() == [])
        assert inbox.items == [] and telegram.offsets.count(None) >= 2
    finally:
        await second.stop()


async def test_a_bad_token_fails_start_in_one_line_without_the_token(
    telegram: FakeTelegram, tmp_path: Path
) -> None:
    channel = TelegramChannel("999:wrong-token", base_url=telegram.url)
    with pytest.raises(ChannelError) as caught:
        await channel.start(Inbox().deliver)
    assert caught.value.fatal and "bot_token" in str(caught.value)
    assert "wrong-token" not in str(caught.value) and caught.value.__cause__ is None
    assert "\n" not in str(caught.value)
    await channel.stop()


async def test_network_failures_while_polling_are_retried(
    telegram: FakeTelegram, inbox: Inbox, tmp_path: Path
) -> None:
    telegram.fail("getUpdates", 502, times=3)
    telegram.message("hello")
    channel = make_channel(telegram, tmp_path)
    await channel.start(inbox.deliver)
    try:
        [inbound] = await received(telegram, inbox)
        assert inbound.text == "hello"
    finally:
        await channel.stop()


async def test_an_update_whose_delivery_failed_comes_again_in_order(
    telegram: FakeTelegram, inbox: Inbox, tmp_path: Path
) -> None:
    inbox.failures = 2
    first, second = telegram.message("first"), telegram.message("second")
    channel = make_channel(telegram, tmp_path)
    await channel.start(inbox.deliver)
    try:
        items = await received(telegram, inbox, 2)
        assert [item.text for item in items] == ["first", "second"]
        # Telegram was asked for the failed update again before anything moved past it.
        assert telegram.offsets[:3] == [None, None, None]
        await telegram.wait_until(lambda: second["update_id"] + 1 in telegram.offsets)
        assert first["update_id"] + 1 not in telegram.offsets[:3]
    finally:
        await channel.stop()


async def test_stop_acknowledges_what_was_delivered_and_start_resumes(
    telegram: FakeTelegram, inbox: Inbox, tmp_path: Path
) -> None:
    channel = make_channel(telegram, tmp_path)
    await channel.start(inbox.deliver)
    telegram.message("one")
    await received(telegram, inbox)
    await channel.stop()
    assert telegram.pending() == []  # a restart will not fetch it again
    telegram.message("two")
    await channel.start(inbox.deliver)
    try:
        assert [item.text for item in await received(telegram, inbox, 2)] == ["one", "two"]
    finally:
        await channel.stop()


# Webhook ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
async def hooked(telegram: FakeTelegram, inbox: Inbox, tmp_path: Path) -> AsyncIterator[str]:
    """A channel in webhook mode; yields the URL Telegram posts to."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/telegram/hook"
    channel = make_channel(
        telegram,
        tmp_path,
        mode="webhook",
        webhook_url=url,
        secret_token="s3cret-Token_1",
        listen_port=port,
    )
    await channel.start(inbox.deliver)
    yield url
    await channel.stop()


async def test_webhook_updates_with_the_right_secret_are_delivered(
    hooked: str, telegram: FakeTelegram, inbox: Inbox
) -> None:
    assert telegram.webhook == {
        "url": hooked,
        "secret_token": "s3cret-Token_1",
        "allowed_updates": ["message", "callback_query", "message_reaction"],
    }
    inbox.failures = 1  # answered 500, so Telegram posts it again
    telegram.message("via webhook")
    [inbound] = await received(telegram, inbox)
    assert inbound.text == "via webhook"
    await telegram.wait_until(lambda: 200 in telegram.webhook_statuses)
    assert telegram.webhook_statuses == [500, 200]


async def test_webhook_refuses_forged_and_malformed_requests(hooked: str, inbox: Inbox) -> None:
    good = {"X-Telegram-Bot-Api-Secret-Token": "s3cret-Token_1"}
    update = {
        "update_id": 5,
        "message": {
            "message_id": 1,
            "date": 0,
            "chat": {"id": 1, "type": "private"},
            "from": {"id": 1, "is_bot": False, "first_name": "A"},
            "text": "hi",
        },
    }
    async with httpx.AsyncClient() as client:
        statuses = [
            (await client.post(hooked, json=update)).status_code,
            (
                await client.post(hooked, json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "guess"})
            ).status_code,
            (await client.post(hooked, content=b"{not json", headers=good)).status_code,
            (await client.post(hooked, json=["update"], headers=good)).status_code,
            (await client.post(hooked, json={"update_id": 6, "message": "hi"}, headers=good)).status_code,
            (await client.post(hooked, content=b"x" * (2 * 1024 * 1024), headers=good)).status_code,
            (await client.get(hooked, headers=good)).status_code,
            (await client.post(hooked, content=json.dumps(update), headers=good)).status_code,
        ]
    assert statuses == [403, 403, 400, 400, 400, 413, 405, 200]
    assert [item.text for item in inbox.items] == ["hi"]
