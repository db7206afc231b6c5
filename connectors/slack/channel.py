"""The Slack channel: temper on Slack through slack-bolt's asyncio app, over Socket Mode (default:
an outbound websocket, no public URL) or the HTTP Events API (signed requests, http.py).

What arrives and what the daemon gets:
- a DM (`message` with `channel_type: im`) -> `Inbound(is_group=False)`; `thread_id` is the
  thread's ts when the person wrote in a thread, else "" (the whole DM is one session);
- a mention in a channel (`app_mention`) -> `Inbound(is_group=True)` (a session per person) with
  `thread_id` = the thread's ts, or the message's own ts for a new mention: every thread is a
  session and the answer goes into that thread;
- a press on an approval button (`block_actions`) -> `ButtonPress`; the prompt is then rewritten
  to say who chose what;
- `reaction_added` on a message temper sent: `+1`/`thumbsup` -> `Reaction(positive=True)`,
  `-1`/`thumbsdown` -> `Reaction(positive=False)`; other reactions are ignored;
- files in a message are downloaded into `workspace_dir/slack/{channel}-{ts}/` (files.py)
  and listed in `Inbound.attachments`; one that cannot be fetched is named in the text instead.
Ignored (and acknowledged, so Slack does not retry): the bot's own and other bots' messages,
edits, deletions and other message subtypes (an edit is not a new request), plain channel messages
without a mention.

Ids: a message's `platform_message_id` is `"{channel}:{ts}"` (a ts is unique only within its
channel); `send` returns the same form, and `Reaction.message_id` uses it for the reacted message.
A reaction's or button press's `platform_event_id` is Slack's `event_id` / `{channel}:{action_ts}`.
Slack redelivers un-acknowledged events with the same ids, so the daemon's inbox drops repeats.

Acknowledgement: Bolt runs with `process_before_response`, so the ack (the Socket Mode envelope
answer, or the HTTP 200) goes out only after `deliver` returned. When `deliver` raises, nothing is
acknowledged and Slack sends the event again. Slack wants the ack within 3 s; a slow inbox write
or a large file download past that gets a redelivery, which the inbox deduplicates.

Typing: Slack has no typing indicator for bots on the Events API. `typing` puts an
:hourglass_flowing_sand: reaction on the newest message of that chat and thread; `send` removes it.

Sent replies can be found again: each part of a reply posted with an idempotency key carries
message metadata (`temper_reply`: the key and the part's number), which `find_sent` looks for
among the chat's newest LOOKBACK messages (in a thread: its first LOOKBACK messages, the order
conversations.replies lists them, so a reply deeper in a longer thread is posted again). After
a crash between Slack
accepting a reply and the daemon recording that, the restarted daemon asks first and does not
post the reply again (conversations.history/replies need the history scope of the chat's kind:
im:history for DMs, channels:history or groups:history for threads in channels; without it the
lookup fails, is logged, and the reply is posted again, as a channel that cannot tell would).

Platform errors: 429 waits `Retry-After` and retries (up to 3 times, waits up to 30 s), then
raises `ChannelError(retry_after_s=...)`; a send that failed half-way resumes at the first unsent
part when retried with the same idempotency key. `invalid_auth`, `token_revoked` and friends raise
a fatal one-line `ChannelError` at `start` or at the call. A dropped websocket is noticed within
about `ping_interval_s` by slack_sdk's Socket Mode client, which fetches a fresh URL and
reconnects; events Slack could not deliver meanwhile are redelivered.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import aiohttp
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from connectors.channel import ApprovalPrompt, ButtonPress, ChannelError, Deliver, Outgoing, Reaction
from connectors.slack.files import SlackFiles
from connectors.slack.format import (
    APPROVAL_ACTION_PREFIX,
    approval_blocks,
    approval_fallback_text,
    approval_outcome_blocks,
    from_slack,
    split_message,
    to_mrkdwn,
)
from connectors.slack.http import SlackEventsServer
from runtime import Inbound

log = logging.getLogger(__name__)

PLATFORM = "slack"
WORKING_REACTION = "hourglass_flowing_sand"
POSITIVE = frozenset({"+1", "thumbsup"})
NEGATIVE = frozenset({"-1", "thumbsdown"})
DELIVERED_SUBTYPES = frozenset({None, "file_share", "thread_broadcast"})
FATAL_ERRORS = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "token_revoked",
        "token_expired",
        "account_inactive",
        "missing_scope",
        "not_allowed_token_type",
    }
)
RATE_LIMIT_RETRIES = 3
MAX_RATE_LIMIT_WAIT_S = 30.0
REMEMBERED = 4096  # bounded memories (sent replies, latest message per thread): memory stays flat
REPLY_EVENT = "temper_reply"  # the metadata event type marking a posted part of a reply
LOOKBACK = 200  # messages of a chat (or thread) searched for a reply's parts

SlackCall = Callable[..., Awaitable[Any]]


class SlackChannel:
    """A `Channel` for one Slack workspace; see the module docstring."""

    platform = PLATFORM

    def __init__(
        self,
        bot_token: str,
        *,
        app_token: str | None = None,
        signing_secret: str | None = None,
        mode: Literal["socket", "http"] = "socket",
        base_url: str | None = None,
        listen_host: str = "127.0.0.1",
        listen_port: int = 3000,
        workspace_dir: Path | None = None,
        max_file_bytes: int = 50 << 20,
        ping_interval_s: float = 10.0,
    ) -> None:
        if mode == "socket" and not app_token:
            raise ChannelError(
                "slack: Socket Mode needs an app-level token (xapp-..., scope connections:write): "
                "set slack.app_token, or use HTTP mode with slack.signing_secret",
                fatal=True,
            )
        if mode == "http" and not signing_secret:
            raise ChannelError(
                "slack: HTTP mode needs the app's signing secret: set slack.signing_secret", fatal=True
            )
        self.bot_token = bot_token
        self.app_token = app_token
        self.signing_secret = signing_secret
        self.mode = mode
        self.base_url = base_url or "https://slack.com/api/"
        self.listen_host = listen_host
        self.listen_port = listen_port
        self.workspace_dir = workspace_dir
        self.max_file_bytes = max_file_bytes
        self.ping_interval_s = ping_interval_s
        self.bot_user_id: str | None = None
        self._deliver: Deliver | None = None
        self._session: aiohttp.ClientSession | None = None
        self._client: AsyncWebClient | None = None
        self._socket: AsyncSocketModeHandler | None = None
        self._http: SlackEventsServer | None = None
        self._files: SlackFiles | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._sent: OrderedDict[str, list[str]] = OrderedDict()  # idempotency key -> ids sent so far
        self._latest: OrderedDict[tuple[str, str], str] = OrderedDict()  # (chat, thread) -> newest ts
        self._working: OrderedDict[tuple[str, str], str] = OrderedDict()  # (chat, thread) -> ts marked

    @property
    def listen_url(self) -> str | None:
        """Where HTTP mode receives events (the real port once started); None in Socket Mode."""
        return self._http.url if self._http else None

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self, deliver: Deliver) -> None:
        self._deliver = deliver
        self._session = aiohttp.ClientSession()
        self._client = AsyncWebClient(token=self.bot_token, base_url=self.base_url, session=self._session)
        api_host = urlsplit(self.base_url).hostname or "slack.com"
        self._files = SlackFiles(
            self._session, self.bot_token, self.workspace_dir, self.max_file_bytes, api_host
        )
        try:
            auth = await self._call(self._client.auth_test)
            self.bot_user_id = auth.get("user_id")
            app = self._build_app(auth)
            if self.mode == "socket":
                await self._connect_socket(app)
            else:
                assert self.signing_secret is not None
                self._http = SlackEventsServer(app, self.signing_secret, self.listen_host, self.listen_port)
                await self._http.start()
        except BaseException:
            await self.stop()
            raise

    async def _connect_socket(self, app: AsyncApp) -> None:
        assert self.app_token is not None and self._client is not None
        self._socket = AsyncSocketModeHandler(
            app, self.app_token, web_client=self._client, ping_interval=self.ping_interval_s, logger=log
        )
        # Fetch the first websocket URL ourselves: a bad app token is then a fatal ChannelError
        # here instead of the SDK's endless retry loop.
        opened = await self._call(self._client.apps_connections_open, app_token=self.app_token)
        self._socket.client.wss_uri = opened["url"]
        await self._socket.connect_async()

    async def stop(self) -> None:
        if self._socket is not None:
            await self._socket.close_async()
            self._socket = None
        if self._http is not None:
            await self._http.stop()
            self._http = None
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _build_app(self, auth: Any) -> AsyncApp:
        # One workspace, one bot: authorise every event from the auth.test made at start.
        # Bolt's default single-team authorisation calls auth.test per event until an answer
        # is cached, and an event whose call returns late overtakes events that came after it.
        result = AuthorizeResult(
            enterprise_id=auth.get("enterprise_id"), team_id=auth.get("team_id"),
            bot_token=self.bot_token, bot_id=auth.get("bot_id"), bot_user_id=auth.get("user_id"),
        )  # fmt: skip

        async def authorize(**_: Any) -> AuthorizeResult:
            return result

        app = AsyncApp(
            client=self._client,
            authorize=authorize,
            signing_secret=self.signing_secret,
            process_before_response=True,  # ack only after deliver() returned
            request_verification_enabled=False,  # http.py verifies before Bolt parses
            logger=log,
        )
        app.event("message")(self._on_message)
        app.event("app_mention")(self._on_mention)
        app.event("reaction_added")(self._on_reaction)
        app.action(re.compile(f"^{APPROVAL_ACTION_PREFIX}"))(self._on_button)
        app.event(re.compile(".*"))(self._on_other_event)  # acknowledged so Slack does not retry
        app.error(self._on_error)
        return app

    # -- receiving ---------------------------------------------------------------------------

    async def _on_message(self, event: dict[str, Any]) -> None:
        if event.get("channel_type") != "im":
            return  # in channels temper answers mentions, which arrive as app_mention
        if event.get("subtype") not in DELIVERED_SUBTYPES or event.get("bot_id"):
            return
        await self._receive(event, is_group=False, thread_id=event.get("thread_ts", ""))

    async def _on_mention(self, event: dict[str, Any]) -> None:
        if event.get("bot_id"):
            return
        await self._receive(event, is_group=True, thread_id=event.get("thread_ts") or event.get("ts", ""))

    async def _receive(self, event: dict[str, Any], *, is_group: bool, thread_id: str) -> None:
        channel, ts, user = event.get("channel"), event.get("ts"), event.get("user")
        if not (channel and ts and user):
            return
        text = from_slack(event.get("text", ""), self.bot_user_id)
        assert self._files is not None, "start() sets the downloader"
        attachments, notes = await self._files.receive(event.get("files") or [], f"{channel}-{ts}")
        text = "\n".join([text, *notes]).strip()
        if not text and not attachments:
            return
        inbound = Inbound(
            platform=PLATFORM,
            chat_id=channel,
            user_id=user,
            text=text,
            thread_id=thread_id,
            is_group=is_group,
            platform_message_id=f"{channel}:{ts}",
            user_name=_display_name(event),
            attachments=tuple(attachments),
        )
        await self._delivered(inbound)
        _remember(self._latest, (channel, thread_id), ts)

    async def _on_reaction(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        item = event.get("item") or {}
        name = str(event.get("reaction", "")).split("::")[0]  # "+1::skin-tone-3" -> "+1"
        if item.get("type") != "message" or event.get("item_user") != self.bot_user_id:
            return
        if name not in POSITIVE | NEGATIVE:
            return
        channel, ts = item["channel"], item["ts"]
        reaction = Reaction(
            platform=PLATFORM,
            chat_id=channel,
            user_id=event["user"],
            message_id=f"{channel}:{ts}",
            positive=name in POSITIVE,
            platform_event_id=body.get("event_id") or f"{channel}:{ts}:{event['user']}:{name}",
        )
        await self._delivered(reaction)

    async def _on_button(
        self, ack: Callable[[], Awaitable[Any]], body: dict[str, Any], action: dict[str, Any]
    ) -> None:
        channel = (body.get("channel") or {}).get("id") or body["container"]["channel_id"]
        user = body["user"]["id"]
        choice = action["action_id"].removeprefix(APPROVAL_ACTION_PREFIX)
        press = ButtonPress(
            platform=PLATFORM,
            chat_id=channel,
            user_id=user,
            approval_id=action["value"],
            choice=choice,
            platform_event_id=f"{channel}:{action['action_ts']}",
        )
        await self._delivered(press)
        await ack()
        message_ts = body.get("container", {}).get("message_ts")
        if message_ts:
            command = _command_of(body.get("message") or {})
            self._spawn(self._mark_answered(channel, message_ts, command, choice, user))

    async def _on_other_event(self) -> None:
        return None

    async def _on_error(self, error: Exception, body: dict[str, Any]) -> None:
        what = body.get("event", {}).get("type") or body.get("type") or "request"
        log.warning(
            "slack: %s not acknowledged (Slack will send it again): %s: %s", what, type(error).__name__, error
        )

    async def _delivered(self, item: Inbound | ButtonPress | Reaction) -> None:
        assert self._deliver is not None, "start() sets deliver"
        await self._deliver(item)

    # -- sending -----------------------------------------------------------------------------

    async def send(self, message: Outgoing) -> list[str]:
        """Post `message` as mrkdwn, split into parts; a retry with the same idempotency key
        posts only the parts not yet sent and returns all the ids."""
        assert self._client is not None, "start() first"
        key = message.idempotency_key
        ids = self._sent.get(key, []) if key else []
        parts = split_message(to_mrkdwn(message.text))
        for number in range(len(ids), len(parts)):
            posted = await self._call(
                self._client.chat_postMessage,
                channel=message.chat_id,
                text=parts[number],
                thread_ts=message.thread_id or None,
                metadata={"event_type": REPLY_EVENT, "event_payload": {"key": key, "part": number}}
                if key
                else None,
            )
            ids.append(f"{message.chat_id}:{posted['ts']}")
            if key:
                _remember(self._sent, key, ids)
        await self._done_working(message.chat_id, message.thread_id)
        return list(ids)

    async def find_sent(self, message: Outgoing) -> list[str] | None:
        """The ids of `message`'s parts when Slack has all of them (see the module docstring);
        else None, and `send` posts only the parts not found."""
        assert self._client is not None, "start() first"
        key = message.idempotency_key
        if not key:
            return None
        where = {"channel": message.chat_id, "include_all_metadata": True, "limit": LOOKBACK}
        try:
            if message.thread_id:
                page = await self._call(self._client.conversations_replies, ts=message.thread_id, **where)
            else:
                page = await self._call(self._client.conversations_history, **where)
        except ChannelError as error:
            log.warning(
                "slack: cannot look for a reply already sent in %s (%s); sending it", message.chat_id, error
            )
            return None
        found = {}
        for posted in page.get("messages") or []:
            metadata = posted.get("metadata") or {}
            payload = metadata.get("event_payload") or {}
            if metadata.get("event_type") == REPLY_EVENT and payload.get("key") == key:
                found[payload.get("part")] = f"{message.chat_id}:{posted['ts']}"
        ids = list(itertools.takewhile(bool, (found.get(number) for number in range(len(found)))))
        if ids:
            _remember(self._sent, key, ids)
        return ids if len(ids) == len(split_message(to_mrkdwn(message.text))) else None

    async def ask_approval(self, prompt: ApprovalPrompt) -> None:
        assert self._client is not None, "start() first"
        await self._call(
            self._client.chat_postMessage,
            channel=prompt.chat_id,
            thread_ts=prompt.thread_id or None,
            text=approval_fallback_text(prompt.command),
            blocks=approval_blocks(prompt.approval_id, prompt.command, prompt.reason),
        )

    async def typing(self, chat_id: str, thread_id: str = "") -> None:
        """Mark the newest message of this chat and thread with an hourglass (best effort)."""
        ts = self._latest.get((chat_id, thread_id))
        if ts is None or self._client is None or self._working.get((chat_id, thread_id)) == ts:
            return
        try:
            await self._call(
                self._client.reactions_add, channel=chat_id, timestamp=ts, name=WORKING_REACTION, retries=0
            )
        except ChannelError as error:
            log.info("slack: no working indicator in %s: %s", chat_id, error)
            return
        _remember(self._working, (chat_id, thread_id), ts)

    async def _done_working(self, chat_id: str, thread_id: str) -> None:
        ts = self._working.pop((chat_id, thread_id), None)
        if ts is None or self._client is None:
            return
        try:
            await self._call(
                self._client.reactions_remove, channel=chat_id, timestamp=ts, name=WORKING_REACTION, retries=0
            )
        except ChannelError as error:
            log.info("slack: could not remove the working indicator in %s: %s", chat_id, error)

    async def _mark_answered(self, channel: str, ts: str, command: str, choice: str, user: str) -> None:
        assert self._client is not None
        try:
            await self._call(
                self._client.chat_update,
                channel=channel,
                ts=ts,
                text=f"{choice}: {command[:200]}",
                blocks=approval_outcome_blocks(command, choice, user),
            )
        except ChannelError as error:
            log.info("slack: could not mark the approval prompt answered: %s", error)

    def _spawn(self, coro: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- the Web API, with Slack's errors as ChannelError ------------------------------------

    async def _call(self, method: SlackCall, *, retries: int = RATE_LIMIT_RETRIES, **arguments: Any) -> Any:
        """`method(**arguments)`, waiting out short rate limits; Slack errors as ChannelError."""
        name = method.__name__.replace("_", ".")  # chat_postMessage -> chat.postMessage
        for attempt in range(retries + 1):
            try:
                return await method(**arguments)
            except SlackApiError as error:
                code = error.response.get("error") or f"HTTP {error.response.status_code}"
                if error.response.status_code == 429 or code == "ratelimited":
                    wait = float(error.response.headers.get("Retry-After") or 1)
                    if attempt < retries and wait <= MAX_RATE_LIMIT_WAIT_S:
                        log.info("slack: %s rate limited; retrying in %g s", name, wait)
                        await asyncio.sleep(wait)
                        continue
                    raise ChannelError(
                        f"slack: {name} rate limited; retry after {wait:g} s", retry_after_s=wait
                    ) from None
                raise ChannelError(
                    _describe(name, code, error.response.get("needed")), fatal=code in FATAL_ERRORS
                ) from None
            except (aiohttp.ClientError, TimeoutError) as error:
                raise ChannelError(
                    f"slack: {name} failed: cannot reach {self.base_url} ({type(error).__name__})"
                ) from None
        raise AssertionError("unreachable: the loop returns or raises")


def _describe(name: str, code: str, needed: str | None) -> str:
    if code in ("invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive"):
        token = (
            "app-level token (slack.app_token, xapp-...)"
            if name.startswith("apps.")
            else "bot token (slack.bot_token, xoxb-...)"
        )
        return f"slack: {name}: {code}: the {token} is not valid; put a current one in the secrets"
    if code == "missing_scope":
        return f"slack: {name}: the app lacks the scope {needed or '?'}; add it in the app's OAuth settings and reinstall"
    return f"slack: {name} failed: {code}"


def _remember(memory: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    memory[key] = value
    memory.move_to_end(key)
    while len(memory) > REMEMBERED:
        memory.popitem(last=False)


def _display_name(event: dict[str, Any]) -> str | None:
    """The sender's name when Slack included their profile in the event (it often does)."""
    profile = event.get("user_profile") or {}
    return profile.get("display_name") or profile.get("real_name") or None


def _command_of(message: dict[str, Any]) -> str:
    """The command shown in an approval prompt's first section (its code block)."""
    for block in message.get("blocks") or []:
        text = (block.get("text") or {}).get("text", "")
        if "```" in text:
            inner = text.split("```")[1].strip("\n")
            return inner.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return ""
