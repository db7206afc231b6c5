"""The Slack channel in HTTP mode: signed Events API requests against its own listener, replies
through the fake Slack Web API; forged, replayed and malformed requests are turned away."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator

import pytest

from connectors.channel import ApprovalPrompt, ButtonPress, Outgoing
from connectors.slack.channel import SlackChannel
from runtime import Inbound
from tests.fakes import slack_wire
from tests.fakes.slack_server import FakeSlack, RecordingInbox, post_signed

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
async def channel(slack: FakeSlack, inbox: RecordingInbox) -> AsyncIterator[SlackChannel]:
    channel = SlackChannel(
        slack.bot_token,
        signing_secret=slack.signing_secret,
        mode="http",
        base_url=slack.base_url,
        listen_port=0,
    )
    await channel.start(inbox)
    yield channel
    await channel.stop()


def url(channel: SlackChannel) -> str:
    assert channel.listen_url is not None
    return channel.listen_url


async def test_the_url_verification_challenge_is_answered(slack: FakeSlack, channel: SlackChannel) -> None:
    challenge = {
        "token": "t",
        "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
        "type": "url_verification",
    }
    status, body = await post_signed(url(channel), challenge, slack.signing_secret)

    assert status == 200
    assert json.loads(body)["challenge"] == challenge["challenge"]


async def test_a_signed_dm_is_delivered_and_answered(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox
) -> None:
    event = slack_wire.message("hello over http")
    status, _ = await post_signed(url(channel), slack_wire.event_callback(event), slack.signing_secret)

    assert status == 200
    (inbound,) = inbox.items
    assert isinstance(inbound, Inbound) and inbound.text == "hello over http"
    await channel.send(Outgoing(chat_id=inbound.chat_id, text="hi back"))
    assert slack.posted[-1]["text"] == "hi back"


@pytest.mark.parametrize(
    ("secret", "skew_s", "headers"),
    [
        pytest.param("not-the-secret", 0, {}, id="wrong secret"),
        pytest.param(None, -310, {}, id="stale timestamp"),
        pytest.param(None, 310, {}, id="future timestamp"),
        pytest.param(None, 0, {"X-Slack-Signature": ""}, id="no signature"),
        pytest.param(None, 0, {"X-Slack-Signature": "v0=" + "0" * 64}, id="tampered signature"),
    ],
)
async def test_forged_and_replayed_requests_are_rejected_with_401(
    slack: FakeSlack,
    channel: SlackChannel,
    inbox: RecordingInbox,
    secret: str | None,
    skew_s: float,
    headers: dict[str, str],
) -> None:
    payload = slack_wire.event_callback(slack_wire.message("forged"))
    status, _ = await post_signed(
        url(channel), payload, secret or slack.signing_secret, timestamp=time.time() + skew_s, headers=headers
    )

    assert status == 401
    assert inbox.items == []


async def test_malformed_bodies_get_400_and_the_listener_keeps_working(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox
) -> None:
    for body in ["{not json", "[1, 2]", '{"type": "event_callback", "event": "boom"}']:
        status, _ = await post_signed(url(channel), body, slack.signing_secret)
        assert status == 400, body
    status, _ = await post_signed(url(channel), "x" * (2 << 20), slack.signing_secret)
    assert status == 413

    status, _ = await post_signed(
        url(channel), slack_wire.event_callback(slack_wire.message("still fine")), slack.signing_secret
    )
    assert status == 200
    assert [item.text for item in inbox.items if isinstance(item, Inbound)] == ["still fine"]


async def test_a_failed_delivery_answers_500_and_slack_retry_is_taken(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox
) -> None:
    inbox.failures = 1
    payload = slack_wire.event_callback(slack_wire.message("retry me"))
    first, _ = await post_signed(url(channel), payload, slack.signing_secret)
    retry, _ = await post_signed(
        url(channel),
        payload,
        slack.signing_secret,
        headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_error"},
    )

    assert (first, retry) == (500, 200)
    assert [item.text for item in inbox.items if isinstance(item, Inbound)] == ["retry me"]


async def test_a_button_press_arrives_as_form_encoded_interactivity(
    slack: FakeSlack, channel: SlackChannel, inbox: RecordingInbox
) -> None:
    await channel.ask_approval(
        ApprovalPrompt(chat_id="D0DM", thread_id="", approval_id="ap-1", command="sudo ls", reason="root")
    )
    press = slack_wire.button_press(slack.posted[-1], "temper_approval_no")
    status, _ = await post_signed(url(channel), press, slack.signing_secret, form=True)

    assert status == 200
    assert [(p.approval_id, p.choice) for p in inbox.items if isinstance(p, ButtonPress)] == [("ap-1", "no")]
