"""The Slack channel over Socket Mode against the fake Slack (tests/fakes/slack_server.py): what
arrives becomes Inbound / ButtonPress / Reaction, what temper sends lands where it should, and
acknowledgements, rate limits, bad tokens and dropped sockets behave as Slack documents."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from connectors.channel import ApprovalPrompt, ButtonPress, ChannelError, Outgoing, Reaction
from connectors.slack.channel import SlackChannel
from runtime import Inbound
from tests.fakes import slack_wire
from tests.fakes.slack_server import FakeSlack, RecordingInbox

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        yield fake


@pytest.fixture
def inbox() -> RecordingInbox:
    return RecordingInbox()


@pytest.fixture
async def channel(slack: FakeSlack, inbox: RecordingInbox, tmp_path: Path) -> AsyncIterator[SlackChannel]:
    channel = SlackChannel(
        slack.bot_token,
        app_token=slack.app_token,
        base_url=slack.base_url,
        workspace_dir=tmp_path,
        max_file_bytes=1 << 20,
        ping_interval_s=0.2,
    )
    await channel.start(inbox)
    yield channel
    await channel.stop()


async def push_and_wait(slack: FakeSlack, event: dict) -> str:
    envelope_id = await slack.push_event(event)
    await slack.wait_for(lambda: envelope_id in slack.acks)
    return envelope_id


async def test_a_dm_is_delivered_then_acknowledged_and_the_reply_lands_in_the_dm(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox
) -> None:
    event = slack_wire.message("<@UBOT> what is &lt;html&gt;?", channel="D0DM", user="U0ALICE")
    await push_and_wait(slack, event)

    assert inbox.items == [
        Inbound(
            platform="slack",
            chat_id="D0DM",
            user_id="U0ALICE",
            text="what is <html>?",
            platform_message_id=f"D0DM:{event['ts']}",
            user_name="alice",
        )
    ]
    ids = await channel.send(
        Outgoing(chat_id="D0DM", text="An **HTML** tag: `<p>`", reply_to=f"D0DM:{event['ts']}")
    )
    assert slack.posted[-1] | {"ts": None} == {
        "channel": "D0DM",
        "text": "An *HTML* tag: `&lt;p&gt;`",
        "thread_ts": None,
        "blocks": None,
        "metadata": None,
        "ts": None,
    }
    assert ids == [f"D0DM:{slack.posted[-1]['ts']}"]


async def test_a_long_answer_is_split_on_paragraphs_and_a_resent_key_posts_nothing_twice(
    slack: FakeSlack, channel: SlackChannel
) -> None:
    paragraphs = [f"Paragraph {i}. " + "word " * 150 for i in range(20)]  # ~15,000 characters
    message = Outgoing(chat_id="D0DM", text="\n\n".join(paragraphs), idempotency_key="reply-1")

    ids = await channel.send(message)
    again = await channel.send(message)

    texts = [post["text"] for post in slack.posted]
    assert len(texts) == len(ids) >= 4
    assert again == ids
    assert all(len(text) <= 3500 for text in texts)
    assert all(text.startswith("Paragraph ") and text.endswith("word") for text in texts)
    assert " ".join(texts).split() == " ".join(paragraphs).split()


async def test_a_mention_in_a_channel_is_a_group_session_in_its_thread(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox
) -> None:
    first = slack_wire.mention("<@UBOT> deploy please", channel="C0GENERAL", user="U0BOB")
    await push_and_wait(slack, first)
    later = slack_wire.mention(
        "<@UBOT> and the docs", channel="C0GENERAL", user="U0BOB", thread_ts=first["ts"]
    )
    await push_and_wait(slack, later)

    started, followed = inbox.items
    assert isinstance(started, Inbound) and isinstance(followed, Inbound)
    assert (started.text, started.is_group, started.thread_id) == ("deploy please", True, first["ts"])
    assert followed.thread_id == first["ts"]
    assert started.session_key == followed.session_key == f"slack:C0GENERAL:{first['ts']}:U0BOB"
    await channel.send(Outgoing(chat_id="C0GENERAL", text="done", thread_id=followed.thread_id))
    assert (slack.posted[-1]["channel"], slack.posted[-1]["thread_ts"]) == ("C0GENERAL", first["ts"])


async def test_a_thread_in_a_dm_is_its_own_session_and_the_reply_stays_in_it(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox
) -> None:
    await push_and_wait(slack, slack_wire.message("in a thread", thread_ts="1700000000.000001"))

    (inbound,) = inbox.items
    assert isinstance(inbound, Inbound) and inbound.thread_id == "1700000000.000001"
    await channel.send(Outgoing(chat_id=inbound.chat_id, text="still here", thread_id=inbound.thread_id))
    assert slack.posted[-1]["thread_ts"] == "1700000000.000001"


async def test_own_messages_edits_and_unmentioned_channel_chatter_are_acknowledged_not_delivered(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox
) -> None:
    ignored = [
        slack_wire.message("my own answer", user=slack.bot_user_id, bot_id=slack_wire.BOT_ID),
        slack_wire.message("edited", subtype="message_changed"),
        slack_wire.message("hello all", channel="C0GENERAL", channel_type="channel"),
        {"type": "reaction_removed", "user": "U0ALICE", "reaction": "+1", "item": {"type": "message"}},
    ]
    for event in ignored:
        await push_and_wait(slack, event)

    assert inbox.items == []


async def test_approval_buttons_become_a_button_press_acknowledged_after_delivery(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox
) -> None:
    await channel.ask_approval(
        ApprovalPrompt(
            chat_id="D0DM", thread_id="", approval_id="ap-7", command="rm -rf build/", reason="deletes files"
        )
    )
    prompt = slack.posted[-1]
    buttons = [element["action_id"] for element in prompt["blocks"][-1]["elements"]]
    assert buttons == ["temper_approval_yes", "temper_approval_no", "temper_approval_always"]
    assert "rm -rf build/" in prompt["blocks"][0]["text"]["text"]

    press = slack_wire.button_press(prompt, "temper_approval_yes", user="U0ALICE")
    envelope_id = await slack.push_interactive(press)
    await slack.wait_for(lambda: envelope_id in slack.acks and bool(slack.updated))

    action_ts = press["actions"][0]["action_ts"]
    assert inbox.items == [
        ButtonPress(
            "slack",
            "D0DM",
            "U0ALICE",
            approval_id="ap-7",
            choice="yes",
            platform_event_id=f"D0DM:{action_ts}",
        )
    ]
    (updated,) = slack.updated
    assert updated["ts"] == prompt["ts"]
    assert "approved by <@U0ALICE>" in updated["blocks"][0]["text"]["text"]
    assert "rm -rf build/" in updated["blocks"][0]["text"]["text"]


async def test_thumbs_on_temper_messages_become_reactions_and_other_emoji_do_not(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox
) -> None:
    (sent,) = await channel.send(Outgoing(chat_id="D0DM", text="the answer"))
    chat, ts = sent.split(":")
    await push_and_wait(slack, slack_wire.reaction_added("+1::skin-tone-3", channel=chat, ts=ts))
    await push_and_wait(slack, slack_wire.reaction_added("thumbsdown", channel=chat, ts=ts, user="U0BOB"))
    await push_and_wait(slack, slack_wire.reaction_added("tada", channel=chat, ts=ts))
    await push_and_wait(slack, slack_wire.reaction_added("+1", channel=chat, ts=ts, item_user="U0BOB"))

    assert [(r.user_id, r.message_id, r.positive) for r in inbox.items if isinstance(r, Reaction)] == [
        ("U0ALICE", sent, True),
        ("U0BOB", sent, False),
    ]
    assert len(inbox.items) == 2
    assert len({r.platform_event_id for r in inbox.items if isinstance(r, Reaction)}) == 2


async def test_typing_marks_the_message_with_an_hourglass_until_the_reply(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox
) -> None:
    event = slack_wire.message("slow question")
    await push_and_wait(slack, event)

    await channel.typing("D0DM")
    await channel.typing("D0DM")  # the daemon may repeat it; one reaction is enough
    await channel.send(Outgoing(chat_id="D0DM", text="answer"))

    assert slack.reactions == [
        ("add", "D0DM", event["ts"], "hourglass_flowing_sand"),
        ("remove", "D0DM", event["ts"], "hourglass_flowing_sand"),
    ]


async def test_files_are_downloaded_into_the_workspace_and_oversized_ones_named(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox, tmp_path: Path
) -> None:
    report = slack.add_file("q3 report.csv", b"region,total\nnorth,12\n")
    huge = slack.add_file("huge.bin", b"x" * ((1 << 20) + 1))
    event = slack_wire.message("see attached", subtype="file_share", files=[report, huge])
    await push_and_wait(slack, event)

    (inbound,) = inbox.items
    assert isinstance(inbound, Inbound)
    (path,) = inbound.attachments
    assert Path(path) == tmp_path / "slack" / f"D0DM-{event['ts']}" / "q3_report.csv"
    assert Path(path).read_bytes() == b"region,total\nnorth,12\n"
    assert inbound.text == "see attached\n[attached file huge.bin was not received: larger than 1 MiB]"
    assert slack.downloads == [report["id"]]


async def test_an_event_whose_delivery_failed_is_not_acknowledged_and_is_taken_on_redelivery(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox
) -> None:
    inbox.failures = 1
    event = slack_wire.message("keep me")
    first = await slack.push_event(event)
    second = await push_and_wait(slack, slack_wire.message("a later one"))  # processed after the failure
    await slack.wait_for(lambda: len(inbox.items) == 1)

    assert first not in slack.acks and second in slack.acks
    retried = await slack.redeliver(first)
    await slack.wait_for(lambda: retried in slack.acks)
    assert [item.text for item in inbox.items if isinstance(item, Inbound)] == ["a later one", "keep me"]
    assert inbox.items[-1].platform_message_id == f"D0DM:{event['ts']}"  # same id: the inbox dedupes


async def test_a_dropped_socket_reconnects_and_events_still_arrive(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox
) -> None:
    await push_and_wait(slack, slack_wire.message("before"))
    slack.drop_sockets()
    await slack.wait_for(lambda: slack.connections == 2 and slack.live_sockets() == 1, timeout=10)
    await push_and_wait(slack, slack_wire.message("after"))

    assert [item.text for item in inbox.items if isinstance(item, Inbound)] == ["before", "after"]
    assert slack.calls.count("apps.connections.open") == 2  # a fresh URL for the new socket


async def test_slack_asking_to_reconnect_moves_to_a_new_socket(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox
) -> None:
    await slack.ask_to_reconnect()
    await slack.wait_for(lambda: slack.connections == 2 and slack.live_sockets() == 1)
    await push_and_wait(slack, slack_wire.message("on the new socket"))

    assert [item.text for item in inbox.items if isinstance(item, Inbound)] == ["on the new socket"]


async def test_a_short_rate_limit_is_waited_out(slack: FakeSlack, channel: SlackChannel) -> None:
    slack.fail("chat.postMessage", "ratelimited", status=429, retry_after=0.3)
    started = time.monotonic()
    await channel.send(Outgoing(chat_id="D0DM", text="patience"))

    assert time.monotonic() - started >= 0.3
    assert [post["text"] for post in slack.posted] == ["patience"]


async def test_a_long_rate_limit_is_reported_and_a_retry_sends_only_the_rest(
    slack: FakeSlack, channel: SlackChannel
) -> None:
    message = Outgoing(chat_id="D0DM", text="\n\n".join(["a " * 1500, "b " * 1500]), idempotency_key="k")
    slack.fail("chat.postMessage", "ratelimited", status=429, retry_after=120)  # the first part hits it
    with pytest.raises(ChannelError) as raised:
        await channel.send(message)
    assert raised.value.retry_after_s == 120 and not raised.value.fatal

    ids = await channel.send(message)
    assert len(ids) == 2 and [post["text"][0] for post in slack.posted] == ["a", "b"]


async def new_channel(slack: FakeSlack, inbox: RecordingInbox) -> SlackChannel:
    """Another channel on the same workspace: a restarted daemon's, which remembers nothing."""
    channel = SlackChannel(slack.bot_token, app_token=slack.app_token, base_url=slack.base_url)
    await channel.start(inbox)
    return channel


async def test_a_reply_sent_before_a_restart_is_found_by_its_key_not_posted_again(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox
) -> None:
    in_dm = Outgoing(
        chat_id="D0DM", text="\n\n".join(["a " * 1500, "b " * 1500]), idempotency_key="temper-reply-1"
    )
    in_thread = Outgoing(
        chat_id="C0GENERAL", text="threaded", thread_id="1700000000.000001", idempotency_key="temper-reply-2"
    )
    sent = [await channel.send(in_dm), await channel.send(in_thread)]
    await channel.send(Outgoing(chat_id="D0DM", text="a later reply", idempotency_key="temper-reply-3"))
    restarted = await new_channel(slack, inbox)
    try:
        found = [await restarted.find_sent(in_dm), await restarted.find_sent(in_thread)]
        never_sent = await restarted.find_sent(
            Outgoing(chat_id="D0DM", text="new", idempotency_key="temper-reply-4")
        )
    finally:
        await restarted.stop()

    assert found == sent and len(sent[0]) == 2
    assert never_sent is None
    assert slack.posted[0]["metadata"] == {
        "event_type": "temper_reply",
        "event_payload": {"key": "temper-reply-1", "part": 0},
    }
    assert "conversations.history" in slack.calls and "conversations.replies" in slack.calls


async def test_a_reply_cut_short_by_a_restart_posts_only_its_missing_parts(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox
) -> None:
    message = Outgoing(
        chat_id="D0DM", text="\n\n".join(["a " * 1500, "b " * 1500]), idempotency_key="temper-reply-1"
    )
    await channel.send(
        Outgoing(chat_id="D0DM", text="a " * 1500, idempotency_key="temper-reply-1")
    )  # part 0 only
    restarted = await new_channel(slack, inbox)
    try:
        assert await restarted.find_sent(message) is None
        ids = await restarted.send(message)
    finally:
        await restarted.stop()

    assert [post["text"][0] for post in slack.posted] == ["a", "b"]
    assert ids == [f"D0DM:{post['ts']}" for post in slack.posted]


async def test_a_lookup_slack_refuses_means_the_reply_is_sent_again(
    slack: FakeSlack, channel: SlackChannel
) -> None:
    message = Outgoing(chat_id="C0GENERAL", text="hi", idempotency_key="temper-reply-1")
    slack.fail("conversations.history", "missing_scope")

    assert await channel.find_sent(message) is None


async def test_a_revoked_bot_token_is_fatal_at_start(slack: FakeSlack, inbox: RecordingInbox) -> None:
    slack.fail("auth.test", "token_revoked")
    channel = SlackChannel(slack.bot_token, app_token=slack.app_token, base_url=slack.base_url)
    with pytest.raises(ChannelError) as raised:
        await channel.start(inbox)

    assert raised.value.fatal
    assert "token_revoked" in str(raised.value) and "\n" not in str(raised.value)


async def test_a_wrong_app_token_is_fatal_at_start(slack: FakeSlack, inbox: RecordingInbox) -> None:
    channel = SlackChannel(slack.bot_token, app_token="xapp-wrong", base_url=slack.base_url)
    with pytest.raises(ChannelError, match="apps.connections.open: invalid_auth") as raised:
        await channel.start(inbox)

    assert raised.value.fatal
    assert slack.connections == 0


async def test_an_invalid_token_when_sending_is_fatal(slack: FakeSlack, channel: SlackChannel) -> None:
    slack.fail("chat.postMessage", "invalid_auth")
    with pytest.raises(ChannelError) as raised:
        await channel.send(Outgoing(chat_id="D0DM", text="hi"))

    assert raised.value.fatal


def test_socket_mode_without_an_app_token_says_what_to_set() -> None:
    with pytest.raises(ChannelError, match="slack.app_token"):
        SlackChannel("xoxb-1")
