"""python-telegram-bot's HTTP layer on aiohttp instead of httpx.

    Bot(token, base_url=..., request=AiohttpRequest(), get_updates_request=AiohttpRequest())

python-telegram-bot sends every Bot API call through a `BaseRequest`; its default, `HTTPXRequest`,
runs httpx on anyio, which costs about a millisecond of CPU a call in bench/daemon.py (cancel
scopes, per-request timeout objects). aiohttp (already a dependency for Slack and
`temper serve executor`) does the same request for less. Everything above the transport stays
python-telegram-bot's: parameters, parsing, and the Bot API's errors (429 RetryAfter, 409
Conflict, 401 InvalidToken) from the status and body this returns.

Invariants, as `HTTPXRequest` keeps them:
- Parameters go as form fields (`RequestData.json_parameters`); with files, as multipart.
- Timeouts not given per call are the defaults set here; a timeout raises `TimedOut`, any other
  transport failure `NetworkError` naming the aiohttp error.
- One session per instance, made in `initialize` (on the running loop), closed in `shutdown`.
"""

from __future__ import annotations

from typing import Any

import aiohttp
from telegram._utils.defaultvalue import DefaultValue
from telegram.error import NetworkError, TimedOut
from telegram.request import BaseRequest, RequestData


class AiohttpRequest(BaseRequest):
    def __init__(
        self,
        *,
        connection_pool_size: int = 8,
        read_timeout: float | None = 5.0,
        write_timeout: float | None = 5.0,
        connect_timeout: float | None = 5.0,
        pool_timeout: float | None = 1.0,
        media_write_timeout: float | None = 20.0,
    ) -> None:
        self._pool_size = connection_pool_size
        self._read, self._write, self._connect = read_timeout, write_timeout, connect_timeout
        self._pool, self._media_write = pool_timeout, media_write_timeout
        self._session: aiohttp.ClientSession | None = None

    @property
    def read_timeout(self) -> float | None:
        return self._read

    async def initialize(self) -> None:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._pool_size)
            self._session = aiohttp.ClientSession(
                connector=connector, headers={"User-Agent": self.USER_AGENT}
            )

    async def shutdown(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: Any = BaseRequest.DEFAULT_NONE,
        write_timeout: Any = BaseRequest.DEFAULT_NONE,
        connect_timeout: Any = BaseRequest.DEFAULT_NONE,
        pool_timeout: Any = BaseRequest.DEFAULT_NONE,
    ) -> tuple[int, bytes]:
        if self._session is None or self._session.closed:
            raise RuntimeError("this AiohttpRequest is not initialized")
        files = request_data.multipart_data if request_data else None
        fields = request_data.json_parameters if request_data else None
        read = self._read if isinstance(read_timeout, DefaultValue) else read_timeout
        write = (
            (self._media_write if files else self._write)
            if isinstance(write_timeout, DefaultValue)
            else write_timeout
        )
        connect = self._connect if isinstance(connect_timeout, DefaultValue) else connect_timeout
        pool = self._pool if isinstance(pool_timeout, DefaultValue) else pool_timeout
        # aiohttp has no separate write timeout: the whole request gets the sum of the phases.
        phases = [t for t in (pool, connect, write, read) if t is not None]
        timeout = aiohttp.ClientTimeout(
            total=sum(phases) if len(phases) == 4 else None, connect=connect, sock_read=read
        )
        try:
            async with self._session.request(
                method, url, data=_body(fields, files), timeout=timeout
            ) as response:
                return response.status, await response.read()
        except (TimeoutError, aiohttp.ServerTimeoutError) as error:
            raise TimedOut from error
        except aiohttp.ClientError as error:
            raise NetworkError(f"aiohttp.{type(error).__name__}: {error}") from error


def _body(fields: dict[str, str] | None, files: dict[str, Any] | None) -> Any:
    """Form fields, or multipart when there are files (name -> (filename, content, mimetype))."""
    if not files:
        return fields or None
    form = aiohttp.FormData()
    for name, value in (fields or {}).items():
        form.add_field(name, value)
    for name, part in files.items():
        if isinstance(part, tuple):
            filename, content, *rest = part
            form.add_field(name, content, filename=filename, content_type=rest[0] if rest else None)
        else:
            form.add_field(name, part)
    return form
