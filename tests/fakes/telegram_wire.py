"""The Telegram Bot API wire format, as the fake writes and reads it: call parameters, errors,
entities in people's text, and the webhook's POST.

Calls arrive as JSON or as a form whose non-text values are JSON (python-telegram-bot sends
forms); answers are `{"ok": true, "result": ...}` or `{"ok": false, "error_code",
"description"}`, with `parameters.retry_after` on 429. Offsets and lengths of entities count
UTF-16 code units, as Telegram's do.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

TOKEN = "123456:TEST-token_for-the-fake"
OPT_IN_UPDATES = {"chat_member", "message_reaction", "message_reaction_count"}
TEXT_FIELDS = {"text", "caption", "url", "secret_token", "callback_query_id", "file_id", "action"}
DESCRIPTIONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden: bot was blocked by the user",
    409: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
    429: "Too Many Requests: retry after {retry_after}",
    502: "Bad Gateway",
}
Json = dict[str, Any]


class ApiError(Exception):
    """A call the Bot API refuses: HTTP `status` and the body Telegram sends with it."""

    def __init__(self, status: int, description: str, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.status, self.description, self.retry_after = status, description, retry_after

    def body(self) -> Json:
        body: Json = {"ok": False, "error_code": self.status, "description": self.description}
        if self.retry_after is not None:
            body["parameters"] = {"retry_after": self.retry_after}
        return body


def parameters(content_type: str, raw: bytes) -> Json:
    """A call's parameters: JSON, or a form whose non-text values are JSON (as the Bot API
    takes them, and python-telegram-bot sends them)."""
    if content_type.startswith("application/json"):
        return json.loads(raw or b"{}")
    params: Json = {}
    for key, value in urllib.parse.parse_qsl(raw.decode(), keep_blank_values=True):
        try:
            params[key] = value if key in TEXT_FIELDS else json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params


def person(user_id: int, username: str) -> Json:
    return {"id": user_id, "is_bot": False, "first_name": username.title(), "username": username}


def update_kind(update: Json) -> str:
    return next(key for key in update if key != "update_id")


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def entities(text: str) -> list[Json]:
    """What Telegram marks in a person's text: a leading /command and @mentions."""
    found = []
    for match in re.finditer(r"(?<![\w@])@\w{3,32}|^/\w+(?:@\w+)?", text):
        kind = "bot_command" if match.group().startswith("/") else "mention"
        offset, length = utf16_length(text[: match.start()]), utf16_length(match.group())
        found.append({"type": kind, "offset": offset, "length": length})
    return found


def post_update(webhook: Json, update: Json) -> int:
    """POST `update` to the bot's webhook as Telegram does; the HTTP status (0: no answer)."""
    request = urllib.request.Request(
        webhook["url"],
        data=json.dumps(update).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "X-Telegram-Bot-Api-Secret-Token": webhook.get("secret_token", ""),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0  # nothing listening (yet): Telegram would retry later
