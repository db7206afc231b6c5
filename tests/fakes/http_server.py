"""What the fake servers share: a lifecycle usable as `with` or `async with`, and for the stdlib
ones a threaded HTTP/1.1 server on 127.0.0.1 at a free port.

    class FakeThing(ThreadedFake):
        def _answer(self, request: Request) -> Response:
            return json_response({"ok": True, "path": request.path})

A `ThreadedFake` answers one `Request` (method, path, query, headers, body) with one `Response`;
the HTTP is here: the body read by Content-Length, status, headers and body written in one piece,
keep-alive, no Nagle delay, no access log. It runs in daemon threads, so synchronous tests and
asyncio code use it alike without sharing an event loop with it.

Invariants:
- `close()` stops serving and cuts kept-alive connections, so that no client reuses a connection
  to a server that is gone; closing twice, or before starting, does nothing.
- A client that hangs up mid-answer (a timeout test, a cancelled long poll) is not reported.
- `connections` counts the TCP connections accepted; `_served(seconds)` is told, just before an
  answer is written, how long that request took from its request line.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["FakeServer", "Request", "Response", "ThreadedFake", "json_response", "poll_until"]

PHRASES = {status.value: status.phrase for status in HTTPStatus}


class FakeServer:
    """Start with `with`, `async with` or `start()`; stop with `close()`."""

    def start(self) -> Self:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self.start()  # binding a socket and starting a thread: nothing to await

    async def __aexit__(self, *exc_info: object) -> None:
        # Off the caller's loop: closing may wait on a request that the caller's loop answers
        # (a webhook) or on connections whose goodbye it must read.
        await asyncio.to_thread(self.close)


async def poll_until(condition: Callable[[], object], timeout: float, failure: str) -> None:
    """Wait on the caller's event loop until `condition()` is true; AssertionError(`failure`)
    after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(failure)
        await asyncio.sleep(0.002)


@dataclass(frozen=True)
class Request:
    method: str
    target: str  # the path and query as sent
    headers: Message
    body: bytes

    @property
    def path(self) -> str:
        """The path, unquoted, without the query."""
        return urllib.parse.unquote(urllib.parse.urlsplit(self.target).path)

    @property
    def query(self) -> dict[str, str]:
        return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.target).query))

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "")


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)


def json_response(payload: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(status, json.dumps(payload).encode(), headers=headers or {})


class ThreadedFake(FakeServer):
    """A fake on a stdlib HTTP server; subclasses write `_answer`. See the module docstring."""

    def __init__(self) -> None:
        self.connections = 0
        self._httpd: _LoopbackServer | None = None
        self._threads: list[threading.Thread] = []

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the fake server is not started")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """http://127.0.0.1:PORT"""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        if self._httpd is not None:
            raise RuntimeError("the fake server is already started")
        self._httpd = _LoopbackServer(self)
        self._spawn(self._httpd.serve_forever, 0.05)
        return self

    def close(self) -> None:
        """Stop serving, wait for the threads `_spawn` started, drop kept-alive connections."""
        if self._httpd is None:
            return
        self._httpd.shutdown()
        for thread in self._threads:
            thread.join()
        self._httpd.drop_connections()
        self._httpd.server_close()
        self._httpd, self._threads = None, []

    def _spawn(self, target: Callable[..., object], *args: object) -> None:
        """Run `target` in a daemon thread that `close()` joins (it must return once closing)."""
        name = f"{type(self).__name__}-{target.__name__}"
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _answer(self, request: Request) -> Response:
        """Called from the server's threads, one per connection."""
        raise NotImplementedError

    def _served(self, seconds: float) -> None:
        """Told how long each request took, before its answer is written."""


class _LoopbackServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: ThreadedFake) -> None:
        self.fake = fake
        self.open_connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # the client hung up mid-answer
        super().handle_error(request, client_address)

    def drop_connections(self) -> None:
        with self.connections_lock:
            for connection in self.open_connections:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    continue  # the client closed it first
            self.open_connections.clear()


class _Handler(BaseHTTPRequestHandler):
    """HTTP only: read the request, let the fake answer, write the answer in one piece."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _LoopbackServer

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.open_connections.add(self.connection)
            self.server.fake.connections += 1

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.open_connections.discard(self.connection)
        super().finish()

    def parse_request(self) -> bool:
        self.started = time.perf_counter()  # the request line has just been read
        return super().parse_request()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests assert on the fakes' records, not on a log."""

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        fake = self.server.fake
        try:
            length = self.headers.get("Content-Length", "0")
            body = self.rfile.read(int(length)) if length.isdigit() else b""
            response = fake._answer(Request(self.command, self.path, self.headers, body))
        finally:
            # Told before the answer leaves: a client that has its answer sees the count.
            fake._served(time.perf_counter() - self.started)
        lines = [
            f"HTTP/1.1 {response.status} {PHRASES.get(response.status, 'Error')}",
            f"Content-Type: {response.content_type}",
            f"Content-Length: {len(response.body)}",
            *(f"{name}: {value}" for name, value in response.headers.items()),
        ]
        if self.close_connection:
            lines.append("Connection: close")
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode() + response.body)
