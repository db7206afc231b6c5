"""Slack's HTTP Events API edge: a small aiohttp server that checks every request is Slack's
before Bolt sees it.

Answers:
- 401 when the signature headers are missing, the timestamp is more than 5 minutes from now (a
  replay), or the signature `v0=HMAC_SHA256(signing_secret, "v0:{ts}:{body}")` does not match;
- 413 for a body over 1 MiB, 400 for one that is not a Slack payload (not JSON, not an object);
- otherwise Bolt's answer: the `url_verification` challenge, 200 once the event was delivered to
  the daemon, 500 when delivering failed, so Slack retries (with `X-Slack-Retry-Num`) and the
  daemon's inbox drops what it already holds.
Nothing a client sends raises out of the handler; every rejection is logged in one line.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections.abc import Mapping

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.request.internals import parse_body

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1 << 20
MAX_CLOCK_SKEW_S = 300
EVENTS_PATH = "/slack/events"


def signature_problem(signing_secret: str, headers: Mapping[str, str], body: bytes, now: float) -> str | None:
    """Why this request is not provably Slack's, or None when it is."""
    timestamp = headers.get("X-Slack-Request-Timestamp", "")
    signature = headers.get("X-Slack-Signature", "")
    if not timestamp or not signature:
        return "missing signature headers"
    try:
        sent_at = int(timestamp)
    except ValueError:
        return "malformed timestamp"
    if abs(now - sent_at) > MAX_CLOCK_SKEW_S:
        return f"stale timestamp ({int(now - sent_at)} s off)"
    base = b"v0:" + timestamp.encode() + b":" + body
    expected = "v0=" + hmac.new(signing_secret.encode(), base, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, signature):
        return "bad signature"
    return None


def payload_problem(text: str, content_type: str) -> str | None:
    """Why a verified body is still not a Slack payload Bolt can route, or None."""
    try:
        payload = parse_body(text, content_type)
    except ValueError:
        return "body is not JSON or form data"
    if not isinstance(payload, dict):
        return "payload is not an object"
    if "event" in payload and not isinstance(payload["event"], dict):
        return "event is not an object"
    return None


class SlackEventsServer:
    """Receives Events API and interactivity requests on `host:port` at `/slack/events`."""

    def __init__(self, app: AsyncApp, signing_secret: str, host: str, port: int) -> None:
        self.app = app
        self.signing_secret = signing_secret
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{EVENTS_PATH}"

    async def start(self) -> None:
        web_app = web.Application(client_max_size=MAX_BODY_BYTES)
        web_app.router.add_post(EVENTS_PATH, self._handle)
        self._runner = web.AppRunner(web_app, access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()
        self.port = self._runner.addresses[0][1]  # the real one when 0 asked for any free port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()  # over client_max_size: aiohttp answers 413 itself
        problem = signature_problem(self.signing_secret, request.headers, body, time.time())
        if problem:
            log.warning("slack: rejected a request from %s: %s", request.remote, problem)
            return web.json_response({"error": problem}, status=401)
        try:
            text = body.decode()
        except UnicodeDecodeError:
            text, problem = "", "body is not UTF-8"
        problem = problem or payload_problem(text, request.content_type)
        if problem:
            log.warning("slack: rejected a signed request: %s", problem)
            return web.json_response({"error": problem}, status=400)
        bolt_request = AsyncBoltRequest(body=text, query=request.query_string, headers=dict(request.headers))
        return await to_aiohttp_response(await self.app.async_dispatch(bolt_request))
