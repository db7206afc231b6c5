"""A fake Telegram Bot API on 127.0.0.1, for tests and benchmarks.

    with FakeTelegram() as telegram:                 # or `async with FakeTelegram() as telegram:`
        # python-telegram-bot's Bot(base_url=telegram.url + "/bot",
        #                           base_file_url=telegram.url + "/file/bot")
        telegram.message("hello", chat_id=7)         # a person writes; queued for getUpdates
        telegram.callback("yes:a1", message_id=3, chat_id=7)
        telegram.reaction(3, "👍", chat_id=7)
        telegram.fail("sendMessage", 429, retry_after=1)   # the next sendMessage is refused
        await telegram.wait_until(lambda: telegram.sent)
        telegram.sent[-1]["text"]                    # what the bot sent

Methods: getMe, getUpdates (offset confirms, long poll with `timeout`, `allowed_updates`
remembered), setWebhook / deleteWebhook, sendMessage, editMessageText, sendChatAction,
answerCallbackQuery, getFile, and file downloads at /file/bot<token>/<path>.

As Telegram does:
- an update is gone once a getUpdates asks for a greater offset; until then every getUpdates
  returns it again. Updates of kinds not in `allowed_updates` are dropped; by default those are
  `message_reaction`, `message_reaction_count` and `chat_member` (sent only to bots that ask).
- a second getUpdates ends a waiting one with 409 ("terminated by other getUpdates request");
  getUpdates while a webhook is set is 409 too.
- with a webhook set, queued updates are POSTed to it (header X-Telegram-Bot-Api-Secret-Token) one
  at a time, and re-sent until it answers 2xx.
- a wrong token in the path is 401; sendMessage refuses empty text, text over 4096 UTF-16 code
  units, and entities that reach past the text (400).
- a person's /command gets a `bot_command` entity, an @name a `mention` entity; message ids count
  per chat, the bot's messages and people's alike.

Records, in arrival order: `calls` (method names), `offsets` (what each getUpdates asked for),
`sent` (sendMessage parameters, with the `message_id` given), `edits`, `actions`
(sendChatAction), `answers` (answerCallbackQuery), `webhook` (the setWebhook parameters, or
None), `webhook_statuses` (what the bot's webhook answered). Runs in daemon threads (stdlib
`ThreadingHTTPServer`, http_server.py), so synchronous tests and asyncio code use it alike. The
wire format lives in telegram_wire.py.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Self

from tests.fakes.http_server import Request, Response, ThreadedFake, json_response, poll_until
from tests.fakes.telegram_wire import (
    DESCRIPTIONS,
    OPT_IN_UPDATES,
    TOKEN,
    ApiError,
    Json,
    entities,
    parameters,
    person,
    post_update,
    update_kind,
    utf16_length,
)

__all__ = ["TOKEN", "FakeTelegram"]


class FakeTelegram(ThreadedFake):
    """The server; see the module docstring. Start it with `with`, `async with` or `start()`."""

    def __init__(self, token: str = TOKEN, *, bot_username: str = "temper_test_bot") -> None:
        super().__init__()
        self.token = token
        self.me: Json = {
            "id": 4242,
            "is_bot": True,
            "first_name": "temper",
            "username": bot_username,
        }
        self.calls: list[str] = []
        self.offsets: list[int | None] = []
        self.sent: list[Json] = []
        self.edits: list[Json] = []
        self.actions: list[Json] = []
        self.answers: list[Json] = []
        self.webhook: Json | None = None
        self.webhook_statuses: list[int] = []
        self._lock = threading.Condition()
        self._updates: deque[Json] = deque()
        self._allowed: set[str] | None = None  # None: all but OPT_IN_UPDATES
        self._poll_generation = 0
        self._failures: dict[str, deque[ApiError | None]] = {}  # None: answer as usual
        self._messages: dict[tuple[int, int], Json] = {}  # (chat, message id) -> message
        self._chats: dict[int, Json] = {}
        self._message_ids: dict[int, itertools.count[int]] = {}
        self._files: dict[str, tuple[str, bytes]] = {}  # file_id -> (file_path, content)
        self._update_ids = itertools.count(1000)
        self._ids = itertools.count(1)
        self._closing = False

    # People's side: updates for the bot ---------------------------------------------------

    def message(
        self,
        text: str = "",
        *,
        chat_id: int = 1,
        user_id: int | None = None,
        username: str = "alice",
        group: bool = False,
        thread_id: int | None = None,
        reply_to: int | None = None,
        document: tuple[str, bytes] | None = None,
        photo: bytes | None = None,
    ) -> Json:
        """A person's message, queued as an update (returned). `group` makes the chat a
        supergroup, `thread_id` a forum topic in one; `reply_to` is a message id in that chat
        (the person's or the bot's); `document` is (file name, content)."""
        chat = self._chat(chat_id, group=group or thread_id is not None, forum=thread_id is not None)
        message: Json = {
            "message_id": self._next_message_id(chat_id),
            "date": int(time.time()),
            "chat": chat,
            "from": person(user_id or chat_id, username),
        }
        key = "caption" if document or photo else "text"
        if text:
            message[key] = text
            if marked := entities(text):
                message[f"{key}_entities" if key == "caption" else "entities"] = marked
        if thread_id is not None:
            message |= {"message_thread_id": thread_id, "is_topic_message": True}
        if reply_to is not None:
            message["reply_to_message"] = self._messages[(chat_id, reply_to)]
        if document:
            name, content = document
            message["document"] = self._file(content, "documents", name) | {"file_name": name}
        if photo:
            thumb = self._file(b"thumbnail", "photos", "thumb.jpg") | {"width": 90, "height": 90}
            full = self._file(photo, "photos", "photo.jpg") | {"width": 1280, "height": 960}
            message["photo"] = [thumb, full]
        self._messages[(chat_id, message["message_id"])] = message
        return self.push({"message": message})

    def callback(
        self,
        data: str,
        *,
        message_id: int,
        chat_id: int = 1,
        user_id: int | None = None,
        username: str = "alice",
    ) -> Json:
        """A person pressed an inline button with `data` under the bot's message `message_id`."""
        query = {
            "id": f"cbq{next(self._ids)}",
            "from": person(user_id or chat_id, username),
            "chat_instance": str(chat_id),
            "data": data,
            "message": self._messages[(chat_id, message_id)],
        }
        return self.push({"callback_query": query})

    def reaction(
        self,
        message_id: int,
        emoji: str = "👍",
        *,
        chat_id: int = 1,
        user_id: int | None = None,
        old: str | None = None,
    ) -> Json:
        """A person set the reaction `emoji` (replacing `old`) on message `message_id`."""
        user = {"id": user_id or chat_id, "is_bot": False, "first_name": "Alice"}
        reacted = {
            "chat": self._chats.get(chat_id) or self._chat(chat_id),
            "message_id": message_id,
            "user": user,
            "date": int(time.time()),
            "old_reaction": [{"type": "emoji", "emoji": old}] if old else [],
            "new_reaction": [{"type": "emoji", "emoji": emoji}],
        }
        return self.push({"message_reaction": reacted})

    def push(self, update: Json) -> Json:
        """Queue a raw update (an `update_id` is added when missing); returns it."""
        with self._lock:
            update = {"update_id": next(self._update_ids), **update}
            self._updates.append(update)
            self._lock.notify_all()
        return update

    def pending(self) -> list[int]:
        """Ids of the updates not yet confirmed."""
        with self._lock:
            return [update["update_id"] for update in self._updates]

    def fail(
        self,
        method: str,
        status: int,
        description: str | None = None,
        *,
        retry_after: int | None = None,
        times: int = 1,
        after: int = 0,
    ) -> None:
        """Refuse `times` calls of `method` with `status` (and `retry_after` seconds), once
        `after` more calls of it have been answered as usual."""
        text = description or DESCRIPTIONS.get(status, "Error").format(retry_after=retry_after)
        with self._lock:
            queue = self._failures.setdefault(method, deque())
            queue.extend([None] * after)
            queue.extend(ApiError(status, text, retry_after) for _ in range(times))

    async def wait_until(self, condition: Callable[[], object], timeout: float = 5.0) -> None:
        """Wait (on the caller's event loop) until `condition()` is true; fail after `timeout`."""
        await poll_until(condition, timeout, f"fake Telegram: condition not met within {timeout} s")

    # Lifecycle: ThreadedFake's, and the thread that posts to a webhook ----------------------

    def start(self) -> Self:
        self._closing = False
        super().start()
        self._spawn(self._post_to_webhook)
        return self

    def close(self) -> None:
        with self._lock:
            self._closing = True  # ends a waiting getUpdates and the webhook thread
            self._lock.notify_all()
        super().close()

    # HTTP: method calls at /bot<token>/<method>, downloads at /file/bot<token>/<path> --------

    def _answer(self, request: Request) -> Response:
        path = request.path
        if path.startswith("/file/bot"):
            token, _, file_path = path.removeprefix("/file/bot").partition("/")
            content = self._download(file_path) if token == self.token else None
            if content is None:
                return Response(404, b"Not Found", "text/plain")
            return Response(200, content, "application/octet-stream")
        match = re.fullmatch(r"/bot([^/]+)/(\w+)", path)
        if match is None:
            return _refused(ApiError(404, "Not Found"))
        if match.group(1) != self.token:
            return _refused(ApiError(401, "Unauthorized"))
        try:
            params = parameters(request.content_type, request.body) | request.query
            result = self._call(match.group(2), params)
        except ApiError as exc:
            return _refused(exc)
        except (ValueError, KeyError, TypeError) as exc:
            return _refused(ApiError(400, f"Bad Request: {exc}"))
        return json_response({"ok": True, "result": result})

    # The Bot API (called from the server's threads) ----------------------------------------

    def _call(self, method: str, params: Json) -> Any:
        with self._lock:
            self.calls.append(method)
            failures = self._failures.get(method)
            if failures and (failure := failures.popleft()) is not None:
                raise failure
        handler = getattr(self, f"_api_{method}", None)
        if handler is None:
            raise ApiError(404, "Not Found: method not found")
        return handler(params)

    def _api_getMe(self, params: Json) -> Any:
        return self.me

    def _api_getUpdates(self, params: Json) -> Any:
        offset, timeout = params.get("offset"), float(params.get("timeout") or 0)
        limit = int(params.get("limit") or 100)
        deadline = time.monotonic() + timeout
        with self._lock:
            self.offsets.append(offset)
            if self.webhook is not None:
                raise ApiError(
                    409,
                    "Conflict: can't use getUpdates method while webhook is "
                    "active; use deleteWebhook to delete the webhook first",
                )
            if params.get("allowed_updates"):
                self._allowed = set(params["allowed_updates"])
            self._poll_generation += 1
            generation = self._poll_generation
            self._lock.notify_all()  # a getUpdates still waiting is over: 409
            while True:
                while self._updates and (
                    (offset is not None and self._updates[0]["update_id"] < offset)
                    or not self._wanted(self._updates[0])
                ):
                    self._updates.popleft()  # confirmed, or of a kind the bot did not ask for
                ready = [u for u in self._updates if self._wanted(u)][:limit]
                left = deadline - time.monotonic()
                if ready or left <= 0 or self._closing:
                    return ready
                self._lock.wait(left)
                if self._poll_generation != generation:
                    raise ApiError(409, DESCRIPTIONS[409])

    def _wanted(self, update: Json) -> bool:
        kind = update_kind(update)
        return kind not in OPT_IN_UPDATES if self._allowed is None else kind in self._allowed

    def _api_setWebhook(self, params: Json) -> Any:
        with self._lock:
            self.webhook = params
            if params.get("allowed_updates"):
                self._allowed = set(params["allowed_updates"])
            self._lock.notify_all()
        return True

    def _api_deleteWebhook(self, params: Json) -> Any:
        with self._lock:
            self.webhook = None
            if params.get("drop_pending_updates"):
                self._updates.clear()
        return True

    def _api_sendMessage(self, params: Json) -> Any:
        text = str(params.get("text", ""))
        if not text.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        units = utf16_length(text)
        if units > 4096:
            raise ApiError(400, "Bad Request: message is too long")
        for entity in params.get("entities") or []:
            if entity["offset"] < 0 or entity["offset"] + entity["length"] > units:
                raise ApiError(400, "Bad Request: can't parse entities: entity beyond the text")
        chat_id = int(params["chat_id"])
        message_id = self._next_message_id(chat_id)
        message = {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": self._chats.get(chat_id) or self._chat(chat_id),
            "from": self.me,
            "text": text,
        }
        for key in ("entities", "reply_markup", "message_thread_id"):
            if key in params:
                message[key] = params[key]
        with self._lock:
            self._messages[(chat_id, message_id)] = message
            self.sent.append({**params, "message_id": message_id})
        return message

    def _api_editMessageText(self, params: Json) -> Any:
        key = (int(params["chat_id"]), int(params["message_id"]))
        with self._lock:
            message = self._messages.get(key)
            if message is None:
                raise ApiError(400, "Bad Request: message to edit not found")
            message = {k: v for k, v in message.items() if k != "reply_markup"}
            message |= {"text": params["text"], "edit_date": int(time.time())}
            message |= {k: params[k] for k in ("entities", "reply_markup") if k in params}
            self._messages[key] = message
            self.edits.append(params)
        return message

    def _api_sendChatAction(self, params: Json) -> Any:
        with self._lock:
            self.actions.append(params)
        return True

    def _api_answerCallbackQuery(self, params: Json) -> Any:
        with self._lock:
            self.answers.append(params)
        return True

    def _api_getFile(self, params: Json) -> Any:
        file_id = str(params.get("file_id"))
        if file_id not in self._files:
            raise ApiError(400, "Bad Request: invalid file_id")
        path, content = self._files[file_id]
        return {
            "file_id": file_id,
            "file_unique_id": f"u{file_id}",
            "file_size": len(content),
            "file_path": path,
        }

    def _download(self, path: str) -> bytes | None:
        return next((content for p, content in self._files.values() if p == path), None)

    # Webhook delivery ------------------------------------------------------------------------

    def _post_to_webhook(self) -> None:
        """Like Telegram: the oldest update, again and again until the webhook takes it."""
        while True:
            with self._lock:
                while not self._closing and (self.webhook is None or not self._updates):
                    self._lock.wait()
                if self._closing:
                    return
                update, webhook = self._updates[0], dict(self.webhook or {})
            status = post_update(webhook, update)
            with self._lock:
                self.webhook_statuses.append(status)
                if 200 <= status < 300 and self._updates and self._updates[0] is update:
                    self._updates.popleft()
                elif not self._closing:
                    self._lock.wait(0.05)

    # Helpers -------------------------------------------------------------------------------

    def _chat(self, chat_id: int, *, group: bool = False, forum: bool = False) -> Json:
        if group:
            chat = {"id": chat_id, "type": "supergroup", "title": f"group {chat_id}"}
            chat |= {"is_forum": True} if forum else {}
        else:
            chat = {"id": chat_id, "type": "private", "first_name": "Alice"}
        self._chats[chat_id] = chat
        return chat

    def _next_message_id(self, chat_id: int) -> int:
        with self._lock:
            return next(self._message_ids.setdefault(chat_id, itertools.count(1)))

    def _file(self, content: bytes, folder: str, name: str) -> Json:
        """Store a file as Telegram does: its path is the folder and a number, not the name."""
        file_id = f"file{next(self._ids)}"
        suffix = re.search(r"\.\w+$", name)
        self._files[file_id] = (f"{folder}/{file_id}{suffix.group() if suffix else ''}", content)
        return {"file_id": file_id, "file_unique_id": f"u{file_id}", "file_size": len(content)}


def _refused(error: ApiError) -> Response:
    return json_response(error.body(), error.status)
