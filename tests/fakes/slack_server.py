"""A fake Slack on 127.0.0.1: the Web API methods temper calls, Socket Mode's websocket, and
private file downloads, for tests and benchmarks.

    with FakeSlack() as slack:                       # or `async with FakeSlack() as slack:`
        channel = SlackChannel(slack.bot_token, app_token=slack.app_token, base_url=slack.base_url)
        await channel.start(deliver)
        envelope_id = await slack.push_event(slack_wire.message("hi"))   # over the websocket
        await slack.wait_for(lambda: envelope_id in slack.acks)
        slack.posted[-1]["text"]                       # what the client posted

Web API (`{base_url}{method}`, JSON or form bodies, token as `Authorization: Bearer`):
`auth.test`, `chat.postMessage`, `chat.update`, `reactions.add`, `reactions.remove`,
`conversations.history`, `conversations.replies`, `apps.connections.open` (app token; answers
`ws://127.0.0.1:P/link/?ticket=N`). A wrong token gets `invalid_auth`, an unknown method
`unknown_method`, both with HTTP 200 as Slack does. `fail(method, error, status=429,
retry_after=2)` scripts the next answers of a method.

History holds what was posted through the Web API (people's messages arrive as events only): as
Slack does, `conversations.history` lists a channel's top-level messages newest first and
`conversations.replies` a thread, its parent first, both up to `limit` (default 100), and a
message's `metadata` (chat.postMessage's `{"event_type", "event_payload"}`) only with
`include_all_metadata`.

Socket Mode: each connection gets a `hello`; `push(kind, payload)` sends an envelope on the newest
live connection (waiting for one), and what the client answers with the envelope's id is recorded
in `acks`. Slack re-sends what was not acknowledged; here a test does it with `redeliver`.
`drop_sockets()` cuts every connection without a close frame, as a network failure would;
`ask_to_reconnect()` sends the `disconnect` message Slack sends before retiring a connection.

HTTP mode: `post_signed(url, payload, secret)` POSTs an event the way Slack does, signed (or
with a chosen timestamp, or headers overridden, to test rejections).

Files: `add_file(name, content)` stores a file and returns the file object a `message` event
carries; `url_private` serves it only with the bot token.

Records (read them from any thread): `calls` (every Web API method, in order), `posted`
(chat.postMessage: channel, text, thread_ts, blocks, metadata and the ts given), `updated`, `reactions`
(("add" | "remove", channel, timestamp, name)), `envelopes` (pushed), `acks` (envelope id -> the
client's answer), `connections` (websockets accepted), `downloads` (file ids served).

It runs its own event loop in a daemon thread, so asyncio tests and blocking code use it alike.
The event shapes live in slack_wire.py.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, Self
from urllib.parse import urlencode

import aiohttp
from aiohttp import WSMsgType, web

from tests.fakes import slack_wire
from tests.fakes.http_server import FakeServer, poll_until

__all__ = ["FakeSlack", "RecordingInbox", "post_signed"]


@dataclass
class _Failure:
    error: str
    status: int
    retry_after: float | None


_METHODS = {  # Web API method -> the FakeSlack method that answers it
    "auth.test": "_auth_test",
    "chat.postMessage": "_post_message",
    "chat.update": "_update",
    "reactions.add": "_reaction_add",
    "reactions.remove": "_reaction_remove",
    "conversations.history": "_history",
    "conversations.replies": "_replies",
    "apps.connections.open": "_open_connection",
}


class FakeSlack(FakeServer):
    """The server; see the module docstring."""

    def __init__(
        self,
        *,
        bot_token: str = "xoxb-fake-bot-token",
        app_token: str = "xapp-fake-app-token",
        signing_secret: str = "fake-signing-secret",
    ) -> None:
        self.bot_token = bot_token
        self.app_token = app_token
        self.signing_secret = signing_secret
        self.bot_user_id = slack_wire.BOT_USER_ID
        self.calls: list[str] = []
        self.posted: list[dict[str, Any]] = []
        self.updated: list[dict[str, Any]] = []
        self.reactions: list[tuple[str, str, str, str]] = []
        self.envelopes: list[dict[str, Any]] = []
        self.acks: dict[str, dict[str, Any]] = {}
        self.connections = 0
        self.downloads: list[str] = []
        self._failures: dict[str, deque[_Failure]] = defaultdict(deque)
        self._files: dict[str, tuple[str, bytes]] = {}
        self._sockets: list[tuple[web.WebSocketResponse, web.Request]] = []
        self._tickets = itertools.count(1)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The Web API base, trailing slash included, as `WebClient(base_url=...)` wants it."""
        return f"http://127.0.0.1:{self.port}/api/"

    def start(self) -> Self:
        loop = asyncio.new_event_loop()
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(self._serve())
            started.set()
            loop.run_forever()
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="fake-slack", daemon=True)
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("the fake Slack server did not start within 10 s")
        return self

    def close(self) -> None:
        if self._loop is None or self._thread is None:
            return
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop = self._thread = self._runner = None

    stop = close  # the name this fake's lifecycle had first

    async def _serve(self) -> None:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)  # conversations.* reads are GETs
        app.router.add_get("/link/", self._socket)
        app.router.add_get("/files-pri/{file_id}/{name}", self._file)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    # -- scripting ---------------------------------------------------------------------------

    def fail(
        self, method: str, error: str, *, status: int = 200, retry_after: float | None = None, times: int = 1
    ) -> None:
        """Answer the next `times` calls of `method` with `{"ok": false, "error": error}` and
        HTTP `status` (429 with `Retry-After: retry_after` for rate limits)."""
        with self._lock:
            self._failures[method].extend(_Failure(error, status, retry_after) for _ in range(times))

    def add_file(self, name: str, content: bytes, *, mimetype: str = "text/plain") -> dict[str, Any]:
        """Store a file; returns the file object a `message` event carries in `files`."""
        file_id = f"F{len(self._files) + 1:08d}"
        self._files[file_id] = (name, content)
        url = f"http://127.0.0.1:{self.port}/files-pri/{slack_wire.TEAM_ID}-{file_id}/{name}"
        return {
            "id": file_id,
            "name": name,
            "mimetype": mimetype,
            "size": len(content),
            "url_private": url,
            "url_private_download": url + "?download=1",
        }

    # -- Socket Mode -------------------------------------------------------------------------

    async def push(self, kind: str, payload: dict[str, Any], *, retry_attempt: int = 0) -> str:
        """Send an envelope on the newest live socket (waiting up to 5 s for one); its id."""
        env = slack_wire.envelope(kind, payload, retry_attempt=retry_attempt)
        await self._on_server_loop(self._send_envelope(env))
        return str(env["envelope_id"])

    async def push_event(self, event: dict[str, Any], *, event_id: str | None = None) -> str:
        return await self.push("events_api", slack_wire.event_callback(event, event_id=event_id))

    async def push_interactive(self, payload: dict[str, Any]) -> str:
        return await self.push("interactive", payload)

    async def redeliver(self, envelope_id: str) -> str:
        """Send an un-acknowledged envelope again, as Slack does, with `retry_attempt` raised."""
        old = next(env for env in self.envelopes if env["envelope_id"] == envelope_id)
        return await self.push(old["type"], old["payload"], retry_attempt=old["retry_attempt"] + 1)

    def drop_sockets(self) -> None:
        """Cut every websocket without a close frame (a network failure, not a goodbye)."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._abort_sockets)

    async def ask_to_reconnect(self, reason: str = "refresh_requested") -> None:
        """Send the `disconnect` message Slack sends before it retires a connection."""
        message = {"type": "disconnect", "reason": reason, "debug_info": {"host": "fake-slack"}}
        await self._on_server_loop(self._send_json(message))

    def live_sockets(self) -> int:
        return sum(1 for ws, _ in self._sockets if not ws.closed)

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        """Wait (polling) until `predicate()` holds; AssertionError after `timeout` seconds."""
        failure = f"the fake Slack did not see the expected state within {timeout} s"
        await poll_until(predicate, timeout, failure)

    async def _on_server_loop(self, coro: Coroutine[Any, Any, None]) -> None:
        assert self._loop is not None, "start the fake first"
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    async def _send_envelope(self, env: dict[str, Any]) -> None:
        with self._lock:
            self.envelopes.append(env)
        await self._send_json(env)

    async def _send_json(self, message: dict[str, Any]) -> None:
        deadline = time.monotonic() + 5
        while True:
            live = [ws for ws, _ in self._sockets if not ws.closed]
            if live:
                break
            if time.monotonic() > deadline:
                raise AssertionError("no Socket Mode client connected to the fake Slack within 5 s")
            await asyncio.sleep(0.005)
        await live[-1].send_str(json.dumps(message))

    def _abort_sockets(self) -> None:
        for _, request in self._sockets:
            if request.transport is not None:
                request.transport.abort()

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._sockets.append((ws, request))
        with self._lock:
            self.connections += 1
        await ws.send_str(
            json.dumps(
                {"type": "hello", "num_connections": 1, "connection_info": {"app_id": slack_wire.APP_ID}}
            )
        )
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                answer = json.loads(msg.data)
                if "envelope_id" in answer:
                    with self._lock:
                        self.acks[answer["envelope_id"]] = answer
        finally:
            self._sockets.remove((ws, request))
        return ws

    # -- Web API -----------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            params.update(await request.json())
        elif request.can_read_body:
            params.update(await request.post())
        token = request.headers.get("Authorization", "").removeprefix("Bearer ") or params.get("token", "")
        with self._lock:
            self.calls.append(method)
            failure = self._failures[method].popleft() if self._failures[method] else None
        if failure is not None:
            headers = {"Retry-After": f"{failure.retry_after:g}"} if failure.retry_after is not None else {}
            return web.json_response(
                {"ok": False, "error": failure.error}, status=failure.status, headers=headers
            )
        if method not in _METHODS:
            return web.json_response({"ok": False, "error": "unknown_method"})
        wanted = self.app_token if method == "apps.connections.open" else self.bot_token
        if token != wanted:
            return web.json_response({"ok": False, "error": "invalid_auth"})
        answer = getattr(self, _METHODS[method])(params)
        return web.json_response({"ok": True, **answer})

    def _auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": "https://temper-test.slack.com/",
            "team": "temper test",
            "user": "temper",
            "team_id": slack_wire.TEAM_ID,
            "user_id": slack_wire.BOT_USER_ID,
            "bot_id": slack_wire.BOT_ID,
            "is_enterprise_install": False,
        }

    def _post_message(self, params: dict[str, Any]) -> dict[str, Any]:
        ts = slack_wire.next_ts()
        record = {
            "channel": params["channel"],
            "text": params.get("text", ""),
            "thread_ts": params.get("thread_ts"),
            "blocks": _json_field(params.get("blocks")),
            "metadata": _json_field(params.get("metadata")),
            "ts": ts,
        }
        with self._lock:
            self.posted.append(record)
        return {"channel": params["channel"], "ts": ts, "message": {"text": record["text"], "ts": ts}}

    def _history(self, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            top = [
                post for post in self.posted if post["channel"] == params["channel"] and not post["thread_ts"]
            ]
        return self._listing(reversed(top), params)

    def _replies(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = params["ts"]
        with self._lock:
            found = [
                post
                for post in self.posted
                if post["channel"] == params["channel"] and thread in (post["ts"], post["thread_ts"])
            ]
        return self._listing(found, params)

    def _listing(self, posts: Iterable[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
        with_metadata = str(params.get("include_all_metadata", "")).lower() in ("1", "true")
        messages = []
        for post in itertools.islice(posts, int(params.get("limit") or 100)):
            message = {
                "type": "message",
                "user": slack_wire.BOT_USER_ID,
                "text": post["text"],
                "ts": post["ts"],
            }
            if post["thread_ts"]:
                message["thread_ts"] = post["thread_ts"]
            if with_metadata and post["metadata"]:
                message["metadata"] = post["metadata"]
            messages.append(message)
        return {"messages": messages, "has_more": False}

    def _update(self, params: dict[str, Any]) -> dict[str, Any]:
        record = {
            "channel": params["channel"],
            "ts": params["ts"],
            "text": params.get("text", ""),
            "blocks": _json_field(params.get("blocks")),
        }
        with self._lock:
            self.updated.append(record)
        return {"channel": params["channel"], "ts": params["ts"]}

    def _reaction_add(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._record_reaction("add", params)

    def _reaction_remove(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._record_reaction("remove", params)

    def _record_reaction(self, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.reactions.append((kind, params["channel"], params["timestamp"], params["name"]))
        return {}

    def _open_connection(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"url": f"ws://127.0.0.1:{self.port}/link/?ticket={next(self._tickets)}"}

    # -- files -------------------------------------------------------------------------------

    async def _file(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {self.bot_token}":
            return web.Response(status=403, text="no token")
        file_id = request.match_info["file_id"].split("-", 1)[-1]
        if file_id not in self._files:
            return web.Response(status=404, text="no such file")
        with self._lock:
            self.downloads.append(file_id)
        _, content = self._files[file_id]
        return web.Response(body=content, content_type="application/octet-stream")


class RecordingInbox:
    """Stands in for the daemon's durable inbox as a channel's `deliver`: records what arrived;
    `failures = n` makes the next n writes raise, as a full disk would, so nothing is acked."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.failures = 0

    async def __call__(self, item: Any) -> None:
        if self.failures:
            self.failures -= 1
            raise OSError("inbox write failed")
        self.items.append(item)


async def post_signed(
    url: str,
    payload: dict[str, Any] | str,
    secret: str,
    *,
    timestamp: float | None = None,
    form: bool = False,
    headers: dict[str, str] | None = None,
) -> tuple[int, str]:
    """POST an event to an HTTP-mode receiver as Slack would: `payload` as JSON (or as the
    `payload=` form field interactivity uses, with `form=True`), signed with `secret` at
    `timestamp` (now by default). A str payload is sent as is. Returns (status, body text)."""
    if isinstance(payload, str):
        body, content_type = payload, "application/json"
    elif form:
        body, content_type = (
            urlencode({"payload": slack_wire.json_body(payload)}),
            "application/x-www-form-urlencoded",
        )
    else:
        body, content_type = slack_wire.json_body(payload), "application/json"
    sent_headers = {
        "Content-Type": content_type,
        **slack_wire.signed_headers(secret, body, timestamp=timestamp),
    }
    sent_headers.update(headers or {})
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body.encode(), headers=sent_headers) as response,
    ):
        return response.status, await response.text()


def _json_field(value: Any) -> Any:
    """Block Kit arrives as a list in JSON bodies and as a JSON string in form bodies."""
    return json.loads(value) if isinstance(value, str) else value
