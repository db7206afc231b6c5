"""temper on Telegram: the `Channel` for a Telegram bot, over python-telegram-bot's `Bot`.

Receiving, two modes:
- polling (default): one loop of getUpdates long polls, updates handled one at a time in order.
  Telegram counts an update acknowledged once a getUpdates asks for an offset past it, and the
  offset moves past an update only after `deliver` returned for it. When handling fails, the loop
  waits (backoff) and fetches again from that update: nothing is skipped. (python-telegram-bot's
  Application is not used: it handles updates concurrently and moves the offset on its own.)
- webhook: Telegram POSTs updates to `webhook_url`, which a reverse proxy forwards to
  listen_host:listen_port (webhook.py); an update is answered 200 only after `deliver`.

What is delivered, and how ids map, is updates.py's job; how replies are formatted and
split, format.py's.

Errors, as Telegram documents them: 429 waits `retry_after` and tries again (sending gives up
after MAX_FLOOD_WAIT_S and raises `ChannelError(retry_after_s=...)`); network failures retry
with backoff (receiving: forever; sending: NETWORK_TRIES times); 401 (bad token) and 409 (another
getUpdates poller, or a webhook, on the same token) raise a fatal `ChannelError` with one line
that says what to do. A fatal error ends receiving; `wait_stopped` raises it.

The token is part of every Bot API URL: it is masked in httpx's request log while the channel
runs, and no error this module raises carries it (python-telegram-bot's InvalidToken does).
"""

from __future__ import annotations

import asyncio
import logging
import re
import warnings
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import quote, urlsplit

from telegram import (
    Bot,
    CallbackQuery,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    Message,
    MessageEntity,
    ReplyParameters,
    Update,
)
from telegram.constants import ChatAction
from telegram.error import (
    BadRequest,
    Conflict,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
)
from telegram.warnings import PTBDeprecationWarning

from connectors.channel import (
    ApprovalPrompt,
    ButtonPress,
    ChannelError,
    Deliver,
    Delivered,
    Outgoing,
)
from connectors.telegram.format import Entity, Piece, render, split, utf16_len
from connectors.telegram.request import AiohttpRequest
from connectors.telegram.updates import PLATFORM, UpdateReader, button_data
from connectors.telegram.webhook import MalformedUpdate, WebhookListener

__all__ = ["TelegramChannel"]

ALLOWED_UPDATES = ("message", "callback_query", "message_reaction")
MAX_FLOOD_WAIT_S = 30.0
NETWORK_TRIES = 4
STOP_GRACE_S = 10.0  # how long stop() lets the update in hand finish
SENT_MEMORY = 4096  # idempotency keys remembered
SECRET_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,256}")
BUTTONS = (("yes", "Yes"), ("always", "Always"), ("no", "No"))
DECIDED = {"yes": "Approved", "always": "Approved (always)", "no": "Declined"}
T = TypeVar("T")
log = logging.getLogger(__name__)


class TelegramChannel:
    """A Telegram bot as a temper `Channel`; see the module docstring.

    `base_url` is the Bot API root (a local Bot API server, or a fake one in tests).
    `workspace_dir` receives the files people send (None: they are noted, not downloaded).
    Webhook mode needs `webhook_url` (the public HTTPS URL Telegram posts to; its path is the
    path listened on) and `secret_token` (1-256 of A-Z a-z 0-9 _ -).
    """

    platform = PLATFORM

    def __init__(
        self,
        token: str,
        *,
        base_url: str = "https://api.telegram.org",
        mode: Literal["polling", "webhook"] = "polling",
        webhook_url: str | None = None,
        secret_token: str | None = None,
        listen_host: str = "127.0.0.1",
        listen_port: int = 8443,
        workspace_dir: Path | None = None,
        poll_timeout_s: int = 30,
    ) -> None:
        if not token:
            raise ValueError("no Telegram bot token: set telegram.bot_token in secrets.toml")
        if mode == "webhook":
            if not webhook_url or not secret_token:
                raise ValueError("webhook mode needs telegram.webhook_url and telegram.secret_token")
            if not SECRET_TOKEN.fullmatch(secret_token):
                raise ValueError("telegram.secret_token: 1-256 characters of A-Z, a-z, 0-9, _ and -")
        elif mode != "polling":
            raise ValueError(f"telegram mode {mode!r}: 'polling' or 'webhook'")
        root = base_url.rstrip("/")
        self._bot = Bot(
            token,
            base_url=f"{root}/bot",
            base_file_url=f"{root}/file/bot",
            request=AiohttpRequest(),
            get_updates_request=AiohttpRequest(connection_pool_size=1),
        )
        self._mode = mode
        self._webhook_url, self._secret_token = webhook_url, secret_token
        self._listen = (listen_host, listen_port)
        self._workspace_dir = workspace_dir
        self._poll_timeout_s = poll_timeout_s
        self._deliver: Deliver | None = None
        self._reader: UpdateReader | None = None
        self._receiver: asyncio.Task[None] | None = None
        self._listener: WebhookListener | None = None
        self._offset: int | None = None
        self._acked: int | None = None  # the offset Telegram was last told
        self._fetching = False
        self._stopping = False
        self._ended = asyncio.Event()
        self._failure: BaseException | None = None
        self._sent: OrderedDict[str, list[str]] = OrderedDict()
        self._hide_token = HideToken(token)

    # Lifecycle -----------------------------------------------------------------------------

    async def start(self, deliver: Deliver) -> None:
        """Connect and begin receiving. After `stop()`, `start` may be called again; the offset
        and the idempotency keys carry over."""
        self._deliver = deliver
        self._stopping, self._failure, self._ended = False, None, asyncio.Event()
        logging.getLogger("httpx").addFilter(self._hide_token)
        try:
            await self._begin()
        except BaseException:
            await self.stop()
            raise

    async def _begin(self) -> None:
        await self._request("getMe", self._bot.initialize)
        self._reader = UpdateReader(self._bot, self._workspace_dir)
        if self._mode == "polling":
            await self._request("deleteWebhook", self._bot.delete_webhook)
            self._receiver = asyncio.create_task(self._receive(), name="telegram-polling")
            return
        assert self._webhook_url is not None and self._secret_token is not None
        self._listener = WebhookListener(
            self._on_webhook,
            secret_token=self._secret_token,
            host=self._listen[0],
            port=self._listen[1],
            path=urlsplit(self._webhook_url).path or "/",
        )
        await self._listener.start()
        await self._request(
            "setWebhook",
            lambda: self._bot.set_webhook(
                self._webhook_url or "",
                secret_token=self._secret_token,
                allowed_updates=ALLOWED_UPDATES,
            ),
        )

    async def stop(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        if self._receiver is not None:
            if self._fetching:  # waiting on a long poll: nothing in hand to finish
                self._receiver.cancel()
            done, _ = await asyncio.wait([self._receiver], timeout=STOP_GRACE_S)
            if not done:
                self._receiver.cancel()
                await asyncio.wait([self._receiver])
            self._receiver = None
            if self._failure is None:  # after a 409, one more getUpdates would end the other poller
                await self._acknowledge()
        if self._listener is not None:
            await self._listener.stop()  # the webhook stays set: Telegram keeps updates for us
            self._listener = None
        self._ended.set()
        await self._bot.shutdown()
        logging.getLogger("httpx").removeFilter(self._hide_token)

    async def wait_stopped(self) -> None:
        """Return once receiving has ended by `stop()`; raise what ended it otherwise (a fatal
        `ChannelError`, such as another instance polling with the same token)."""
        await self._ended.wait()
        if self._failure is not None:
            raise self._failure

    # Receiving -----------------------------------------------------------------------------

    async def _receive(self) -> None:
        try:
            await self._poll()
        except asyncio.CancelledError:
            if not self._stopping:
                raise
        except Exception as exc:  # ends receiving; the daemon learns it from wait_stopped
            log.error("telegram: receiving stopped: %s", exc)
            self._failure = exc
            self._ended.set()

    async def _poll(self) -> None:
        backoff = Backoff()
        while not self._stopping:
            self._fetching = True
            try:
                updates = await self._request(
                    "getUpdates",
                    lambda: self._bot.get_updates(
                        offset=self._offset,
                        timeout=self._poll_timeout_s,
                        allowed_updates=ALLOWED_UPDATES,
                    ),
                    patient=True,
                )
            finally:
                self._fetching = False
            self._acked = self._offset
            for update in updates:
                try:
                    await self._handle(update)
                except Exception as exc:
                    if isinstance(exc, ChannelError) and exc.fatal:
                        raise
                    log.warning(
                        "telegram: update %s not delivered (%s); fetching it again",
                        update.update_id,
                        exc,
                    )
                    await asyncio.sleep(backoff.next())
                    break
                backoff.reset()
                self._offset = update.update_id + 1
                if self._stopping:
                    return

    async def _acknowledge(self) -> None:
        """Tell Telegram about updates delivered since the last getUpdates, so that a restart
        does not fetch them again (the inbox would drop them; this saves the round)."""
        if self._offset is None or self._offset == self._acked:
            return
        try:
            await self._bot.get_updates(offset=self._offset, timeout=0, limit=1)
        except TelegramError as exc:
            log.info("telegram: could not acknowledge the last updates (%s); they will repeat", exc)

    async def _on_webhook(self, data: dict[str, Any]) -> None:
        try:
            update = Update.de_json(data, self._bot)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise MalformedUpdate(str(exc)) from exc
        try:
            await self._handle(update)
        except ChannelError as exc:
            if exc.fatal:
                self._failure = exc
                self._ended.set()
            raise

    async def _handle(self, update: Update) -> None:
        """Deliver what the update carries for temper; then settle a pressed button."""
        assert self._reader is not None and self._deliver is not None, "start() first"
        item = await self._reader.read(update)
        if item is not None:
            await self._deliver(item)
        if update.callback_query is not None:
            await self._settle(update.callback_query, item)

    async def _settle(self, query: CallbackQuery, item: Delivered | None) -> None:
        """Answer the press (Telegram shows a spinner until then) and write the decision under
        the question, removing the buttons. Best effort: the press is already delivered."""
        decided = DECIDED[item.choice] if isinstance(item, ButtonPress) else None
        try:
            await self._bot.answer_callback_query(query.id, text=decided or "This button has expired.")
            message = query.message
            if decided and isinstance(message, Message) and message.text:
                who = (
                    f"@{query.from_user.username}" if query.from_user.username else query.from_user.full_name
                )
                await self._bot.edit_message_text(
                    f"{message.text}\n\n{decided} by {who}",
                    chat_id=message.chat.id,
                    message_id=message.message_id,
                    entities=message.entities,
                )
        except TelegramError as exc:
            log.info("telegram: could not settle button press %s: %s", query.id, exc)

    # Sending -------------------------------------------------------------------------------

    async def send(self, message: Outgoing) -> list[str]:
        """Send `message.text` (markdown) as formatted pieces; a second call with the same
        idempotency key sends only the pieces the first did not."""
        pieces = split(*render(message.text))
        key = message.idempotency_key
        ids = self._sent.get(key, []) if key else []
        for number in range(len(ids), len(pieces)):
            sent = await self._send_piece(message, pieces[number], first=number == 0)
            ids.append(f"{sent.chat.id}:{sent.message_id}")
            if key:
                self._sent[key] = ids
                self._sent.move_to_end(key)
                if len(self._sent) > SENT_MEMORY:
                    self._sent.popitem(last=False)
        return list(ids)

    async def _send_piece(self, message: Outgoing, piece: Piece, *, first: bool) -> Message:
        reply_to = (message.reply_to or "").rpartition(":")[2]
        reply = (
            ReplyParameters(int(reply_to), allow_sending_without_reply=True)
            if first and reply_to.isdigit()
            else None
        )

        def send(entities: list[MessageEntity] | None) -> Awaitable[Message]:
            return self._bot.send_message(
                _chat(message.chat_id),
                piece.text,
                entities=entities,
                message_thread_id=int(message.thread_id) if message.thread_id else None,
                reply_parameters=reply,
            )

        try:
            return await self._request("sendMessage", lambda: send(_entities(piece.entities)))
        except ChannelError as exc:
            if not (
                piece.entities
                and isinstance(exc.__cause__, BadRequest)
                and "entit" in str(exc.__cause__).lower()
            ):
                raise
            log.warning("telegram: formatting refused (%s); sending plain text", exc)
            return await self._request("sendMessage", lambda: send(None))

    async def ask_approval(self, prompt: ApprovalPrompt) -> None:
        head = "temper wants to run:\n\n"
        command = _shorten(prompt.command, 3000)
        text = f"{head}{command}\n\n{_shorten(prompt.reason, 500)}".rstrip()
        buttons = [
            InlineKeyboardButton(label, callback_data=button_data(prompt.approval_id, choice))
            for choice, label in BUTTONS
        ]
        code = MessageEntity(MessageEntity.PRE, utf16_len(head), utf16_len(command))
        await self._request(
            "sendMessage",
            lambda: self._bot.send_message(
                _chat(prompt.chat_id),
                text,
                entities=[code] if command else None,
                reply_markup=InlineKeyboardMarkup([buttons]),
                message_thread_id=int(prompt.thread_id) if prompt.thread_id else None,
            ),
        )

    async def typing(self, chat_id: str, thread_id: str = "") -> None:
        """Telegram shows it for 5 seconds, or until the next message: call again while working."""
        try:
            await self._bot.send_chat_action(
                _chat(chat_id),
                ChatAction.TYPING,
                message_thread_id=int(thread_id) if thread_id else None,
            )
        except TelegramError as exc:
            log.debug("telegram: typing indicator not shown: %s", exc)

    # Calling the Bot API -------------------------------------------------------------------

    async def _request(self, method: str, call: Callable[[], Awaitable[T]], *, patient: bool = False) -> T:
        """One Bot API call under Telegram's error rules (module docstring). `patient` (the
        receiving loop): wait out any flood control and retry network failures forever."""
        backoff = Backoff()
        failures = 0
        while True:
            try:
                return await call()
            except RetryAfter as exc:
                wait = _retry_after_s(exc)
                if wait > MAX_FLOOD_WAIT_S and not patient:
                    raise ChannelError(
                        f"Telegram {method}: flood control, retry in {wait:g} s", retry_after_s=wait
                    ) from exc
                await asyncio.sleep(wait)
            except InvalidToken:
                raise ChannelError(
                    "Telegram refused the bot token (401 Unauthorized): set telegram.bot_token "
                    "in secrets.toml to the token @BotFather gave",
                    fatal=True,
                ) from None  # python-telegram-bot's message quotes the token
            except BadRequest as exc:  # a subclass of NetworkError, but retrying will not help
                raise ChannelError(f"Telegram {method}: {exc.message}") from exc
            except NetworkError as exc:
                failures += 1
                if failures >= NETWORK_TRIES and not patient:
                    raise ChannelError(f"Telegram {method}: {exc.message} ({failures} tries)") from exc
                await asyncio.sleep(backoff.next())
            except Conflict as exc:
                raise ChannelError(
                    f"Telegram {method}: {exc.message}. Another program (another temper?) is "
                    "receiving updates for this bot, by polling or through a webhook: stop it, "
                    "or give each its own bot",
                    fatal=True,
                ) from exc
            except TelegramError as exc:
                raise ChannelError(f"Telegram {method}: {exc.message}") from exc


class Backoff:
    """Delays that double from `first` to `cap` seconds; `reset` after a success."""

    def __init__(self, first: float = 0.1, cap: float = 30.0) -> None:
        self._first, self._cap = first, cap
        self._delay = first

    def next(self) -> float:
        delay, self._delay = self._delay, min(self._cap, self._delay * 2)
        return delay

    def reset(self) -> None:
        self._delay = self._first


class HideToken(logging.Filter):
    """Masks the bot token in log records (httpx logs every request URL at INFO)."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self._forms = {token, quote(token)}  # file URLs carry it percent-encoded

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if any(form in message for form in self._forms):
            for form in self._forms:
                message = message.replace(form, "<bot token>")
            record.msg, record.args = message, ()
        return True


def _retry_after_s(exc: RetryAfter) -> float:
    with warnings.catch_warnings():  # the int form is deprecated; the timedelta form is opt-in
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def _entities(entities: tuple[Entity, ...]) -> list[MessageEntity] | None:
    return [
        MessageEntity(e.type, e.offset, e.length, url=e.url, language=e.language) for e in entities
    ] or None


def _chat(chat_id: str) -> int | str:
    """Telegram chat ids are numbers; an @channelname stays text."""
    return int(chat_id) if chat_id.lstrip("-").isdigit() else chat_id


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[: limit - 1]}…"
