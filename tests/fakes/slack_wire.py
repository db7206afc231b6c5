"""What Slack sends, as plain dicts: Events API callbacks, Socket Mode envelopes, Block Kit button
presses, and the signature on HTTP events. The fake Slack server (slack_server.py) and the tests
build their traffic from these, so a test reads as "a DM saying hi arrived", not as JSON.

Shapes follow Slack's documentation (docs.slack.dev: events `message.im`, `app_mention`,
`reaction_added`; interactivity payload `block_actions`; Socket Mode envelopes), trimmed to the
fields a client reads.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
import uuid
from typing import Any

TEAM_ID = "T0TEST"
APP_ID = "A0TEST"
BOT_USER_ID = "UBOT"
BOT_ID = "BBOT"

_ts_counter = itertools.count(1)


def next_ts() -> str:
    """A fresh Slack message timestamp ("seconds.micro"): unique in this process."""
    return f"{1_700_000_000 + next(_ts_counter)}.{next(_ts_counter) % 1_000_000:06d}"


def event_callback(event: dict[str, Any], *, event_id: str | None = None) -> dict[str, Any]:
    """The Events API body that carries `event` (what HTTP mode POSTs, and a Socket Mode
    `events_api` envelope's payload)."""
    return {
        "token": "unused-verification-token",
        "team_id": TEAM_ID,
        "api_app_id": APP_ID,
        "event": event,
        "type": "event_callback",
        "event_id": event_id or f"Ev{uuid.uuid4().hex[:10].upper()}",
        "event_time": int(time.time()),
        "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
    }


def message(
    text: str,
    *,
    channel: str = "D0DM",
    user: str = "U0ALICE",
    ts: str | None = None,
    thread_ts: str | None = None,
    channel_type: str = "im",
    subtype: str | None = None,
    files: list[dict[str, Any]] | None = None,
    bot_id: str | None = None,
) -> dict[str, Any]:
    """A `message` event (a DM by default)."""
    event: dict[str, Any] = {
        "type": "message",
        "channel": channel,
        "user": user,
        "text": text,
        "ts": ts or next_ts(),
        "channel_type": channel_type,
        "user_profile": {"display_name": user.removeprefix("U0").lower(), "real_name": user},
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    if subtype:
        event["subtype"] = subtype
    if files:
        event["files"] = files
    if bot_id:
        event["bot_id"] = bot_id
    return event


def mention(
    text: str,
    *,
    channel: str = "C0GENERAL",
    user: str = "U0ALICE",
    ts: str | None = None,
    thread_ts: str | None = None,
) -> dict[str, Any]:
    """An `app_mention` event: `text` should contain `<@UBOT>` as Slack writes it."""
    event: dict[str, Any] = {
        "type": "app_mention",
        "channel": channel,
        "user": user,
        "text": text,
        "ts": ts or next_ts(),
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def reaction_added(
    reaction: str, *, channel: str, ts: str, user: str = "U0ALICE", item_user: str = BOT_USER_ID
) -> dict[str, Any]:
    """A `reaction_added` event on the message `channel`/`ts` (written by `item_user`)."""
    return {
        "type": "reaction_added",
        "user": user,
        "reaction": reaction,
        "item": {"type": "message", "channel": channel, "ts": ts},
        "item_user": item_user,
        "event_ts": next_ts(),
    }


def button_press(message: dict[str, Any], action_id: str, *, user: str = "U0ALICE") -> dict[str, Any]:
    """The `block_actions` payload of a press on the button `action_id` of `message`, a message
    the fake recorded (it carries `channel`, `ts`, `blocks`)."""
    button = next(
        element
        for block in message["blocks"]
        if block.get("type") == "actions"
        for element in block["elements"]
        if element.get("action_id") == action_id
    )
    return {
        "type": "block_actions",
        "team": {"id": TEAM_ID, "domain": "temper-test"},
        "user": {"id": user, "username": user.lower(), "team_id": TEAM_ID},
        "api_app_id": APP_ID,
        "token": "unused-verification-token",
        "container": {"type": "message", "message_ts": message["ts"], "channel_id": message["channel"]},
        "trigger_id": "1.2.3",
        "channel": {"id": message["channel"], "name": "somewhere"},
        "message": {
            "type": "message",
            "ts": message["ts"],
            "text": message["text"],
            "blocks": message["blocks"],
        },
        "response_url": "http://127.0.0.1:9/unused",
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": button.get("block_id", "b"),
                "value": button.get("value", ""),
                "text": button["text"],
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }


def envelope(kind: str, payload: dict[str, Any], *, retry_attempt: int = 0) -> dict[str, Any]:
    """A Socket Mode envelope (`kind`: "events_api" or "interactive")."""
    return {
        "envelope_id": str(uuid.uuid4()),
        "type": kind,
        "payload": payload,
        "accepts_response_payload": kind == "interactive",
        "retry_attempt": retry_attempt,
        "retry_reason": "timeout" if retry_attempt else "",
    }


def sign(secret: str, timestamp: str, body: str) -> str:
    """Slack's request signature: `v0=` + HMAC-SHA256 of `v0:{timestamp}:{body}`."""
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return f"v0={digest}"


def signed_headers(secret: str, body: str, *, timestamp: float | None = None) -> dict[str, str]:
    """The headers Slack sends with an HTTP event: its timestamp and signature over `body`."""
    ts = str(int(time.time() if timestamp is None else timestamp))
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sign(secret, ts, body)}


def json_body(payload: dict[str, Any]) -> str:
    return json.dumps(payload, separators=(",", ":"))
