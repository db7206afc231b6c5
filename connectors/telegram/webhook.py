"""The HTTP endpoint Telegram posts updates to when the bot runs with a webhook.

Telegram POSTs each update as JSON with the secret given to setWebhook in the
`X-Telegram-Bot-Api-Secret-Token` header, and posts it again until it gets a 2xx answer; so the
answer is 200 only after `handle` returned (the update is in the durable inbox).

Answers: 403 for a missing or wrong secret (a forged request), 400 for a body that is not a JSON
update, 413 for a body over 1 MiB, 500 when handling failed (Telegram re-sends), 404 / 405 for
other paths and methods. Every rejection is logged with the sender's address; none of them
reaches `handle` or stops the listener.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

__all__ = ["MalformedUpdate", "WebhookListener"]

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
MAX_BODY = 1024 * 1024
log = logging.getLogger(__name__)


class MalformedUpdate(ValueError):
    """`handle` raises this for a JSON object that is not a Telegram update (answered 400)."""


class WebhookListener:
    """Serves `path` on host:port; `handle(update)` gets each update's decoded JSON object."""

    def __init__(
        self,
        handle: Callable[[dict[str, Any]], Awaitable[None]],
        *,
        secret_token: str,
        host: str,
        port: int,
        path: str,
    ) -> None:
        self._handle = handle
        self._secret = secret_token.encode()
        self._host, self._port = host, port
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_post(path, self._receive)
        self._runner = web.AppRunner(app, access_log=None)

    async def start(self) -> None:
        await self._runner.setup()
        await web.TCPSite(self._runner, self._host, self._port).start()

    async def stop(self) -> None:
        await self._runner.cleanup()

    async def _receive(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, self._secret):
            return _reject(request, 403, "wrong or missing secret token")
        try:
            update = json.loads(await request.read())
        except web.HTTPRequestEntityTooLarge:
            return _reject(request, 413, f"body over {MAX_BODY} bytes")
        except (UnicodeDecodeError, json.JSONDecodeError):
            return _reject(request, 400, "body is not JSON")
        if not isinstance(update, dict) or not isinstance(update.get("update_id"), int):
            return _reject(request, 400, "body is not a Telegram update")
        try:
            await self._handle(update)
        except MalformedUpdate as exc:
            return _reject(request, 400, f"malformed update: {exc}")
        except Exception:  # Telegram will post it again; the listener keeps serving
            log.exception("telegram webhook: update %s not handled", update["update_id"])
            return web.Response(status=500, text="not handled; send it again")
        return web.Response(text="ok")


def _reject(request: web.Request, status: int, why: str) -> web.Response:
    log.warning("telegram webhook: refused a request from %s: %s", request.remote, why)
    return web.Response(status=status, text=why)
