"""A scripted OpenAI-compatible chat server on 127.0.0.1, for tests and benchmarks.

    with FakeOpenAI() as server:                 # or `async with FakeOpenAI() as server:`
        server.enqueue(text="hello")
        server.enqueue(tool_calls=[{"name": "terminal_task", "arguments": {"query": "ls"}}])
        server.enqueue(error=429, retry_after=0.1)
        ...  # point any client at server.base_url (http://127.0.0.1:PORT/v1), any API key
        server.requests[-1]["messages"]          # what the client sent

Endpoints: `POST /v1/chat/completions` (plain JSON, or server-sent events when the body says
`"stream": true`: text deltas, tool-call deltas, a usage chunk when `stream_options.include_usage`,
then `[DONE]`) and `GET /v1/models`.

Invariants:
- A scripted model, not a simulated one: replies are served strictly in the order enqueued, and
  nothing depends on what the request says. `enqueue(..., model="b")` answers only requests for
  model "b" (the name on the wire: litellm sends `openai/b` as `b`); other replies sit in a shared
  queue that answers any model whose own queue is empty.
- An empty queue answers HTTP 400 with a message that names the model and says to enqueue, and the
  request is noted in `unanswered`: a test that forgot a reply fails loudly, it never hangs.
- A malformed request (not JSON, no `model`, no `messages` list) gets 400 and consumes nothing;
  other paths 404, GET on the chat path 405, other methods 501.
- Every chat request body that parsed is recorded in `requests`, its headers in `request_headers`.
- `time_inside_s` sums, over all requests, the time from reading the request line to writing the
  last byte, scripted delays included. A benchmark subtracts it to get the client's own cost.
- Token counts in `usage` are cheap approximations (bytes / 4) unless given to `enqueue`.

The wire format lives in openai_wire.py; this module is the script, the records and the HTTP.

It runs in a daemon thread (stdlib `ThreadingHTTPServer`, HTTP/1.1 keep-alive, no Nagle delay), so
synchronous tests and asyncio code use it alike without sharing an event loop with it.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections import deque
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from tests.fakes.openai_wire import ScriptedReply, completion_body, error_body, event_stream

__all__ = ["FakeOpenAI"]

CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
JSON = "application/json"
PHRASES = {status.value: status.phrase for status in HTTPStatus}
Answer = tuple[int, str, bytes, dict[str, str]]  # status, content type, body, extra headers


class FakeOpenAI:
    """The server; see the module docstring. Start it with `with`, `async with` or `start()`.

    Records, in arrival order: `requests` (chat request bodies), `request_headers` (their headers,
    names lower-cased), `unanswered` (models of requests that found no reply), `handled` (requests
    of any kind), `connections` (TCP connections accepted) and `time_inside_s` (seconds spent
    answering them, all together).
    """

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self.unanswered: list[str] = []
        self.handled = 0
        self.connections = 0
        self.time_inside_s = 0.0
        self._lock = threading.Lock()
        self._shared: deque[ScriptedReply] = deque()
        self._by_model: dict[str, deque[ScriptedReply]] = {}
        self._calls = 0
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def enqueue(
        self,
        text: str | list[str] | None = None,
        *,
        tool_calls: list[dict[str, Any]] | None = None,
        error: int | None = None,
        message: str | None = None,
        retry_after: float | None = None,
        delay: float = 0.0,
        model: str | None = None,
        finish_reason: str | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
    ) -> None:
        """Queue the next reply. `text` as a list fixes the stream chunks; a tool call is
        `{"name": ..., "arguments": {...} or raw JSON text}`; `error` is an HTTP status (>= 400)
        with an optional `message` and `retry_after` seconds (sent as Retry-After); `delay` is
        slept before answering."""
        if text is None and not tool_calls and error is None:
            raise ValueError("enqueue needs text, tool_calls or error")
        if error is not None and not 400 <= error <= 599:
            raise ValueError(f"error must be an HTTP status from 400 to 599, got {error}")
        calls = tuple(
            (
                call["name"],
                args if isinstance(args := call.get("arguments", {}), str) else json.dumps(args),
            )
            for call in tool_calls or []
        )
        reply = ScriptedReply(
            text=tuple(text) if isinstance(text, list) else text,
            tool_calls=calls,
            error=error,
            message=message,
            retry_after=retry_after,
            delay=delay,
            finish_reason=finish_reason,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )
        with self._lock:
            queue = self._shared if model is None else self._by_model.setdefault(model, deque())
            queue.append(reply)

    def pending(self) -> int:
        """Replies not served yet, all queues together."""
        with self._lock:
            return len(self._shared) + sum(len(queue) for queue in self._by_model.values())

    # Lifecycle -----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the fake server is not started")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as base_url, and litellm as api_base."""
        return f"{self.url}/v1"

    def start(self) -> Self:
        if self._httpd is not None:
            raise RuntimeError("the fake server is already started")
        self._httpd = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-openai-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and drop kept-alive connections, so that no client reuses them."""
        if self._httpd is None or self._thread is None:
            return
        self._httpd.shutdown()
        self._thread.join()
        self._httpd.drop_connections()
        self._httpd.server_close()
        self._httpd = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self.start()  # binding a socket and starting a thread: nothing to await

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # Answering (called from the server's threads) ------------------------------------------

    def _answer(self, method: str, path: str, headers: list[tuple[str, str]], raw: bytes) -> Answer:
        path = path.rstrip("/")
        if method == "GET" and path == MODELS_PATH:
            with self._lock:
                names = ["fake-model", *self._by_model]
            data = [{"id": name, "object": "model", "owned_by": "fake"} for name in names]
            return 200, JSON, json.dumps({"object": "list", "data": data}).encode(), {}
        if path != CHAT_PATH:
            return _error(404, f"no such path {path}: try {CHAT_PATH} or {MODELS_PATH}")
        if method != "POST":
            return _error(405, f"{CHAT_PATH} takes POST")
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return _error(400, f"the request body is not JSON: {exc}")
        if not isinstance(body, dict):
            return _error(400, "the request body must be a JSON object")
        with self._lock:
            self.requests.append(body)
            self.request_headers.append({name.lower(): value for name, value in headers})
        model = body.get("model")
        if not isinstance(model, str) or not model:
            return _error(400, "'model' is required")
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            return _error(400, "'messages' must be a non-empty list")
        reply = self._next_reply(model)
        if reply is None:
            return _error(400, f"fake server: no reply queued for model {model!r}; enqueue one")
        if reply.delay:
            time.sleep(reply.delay)
        if reply.error is not None:
            extra = {}
            if reply.retry_after is not None:
                extra = {
                    "Retry-After": f"{reply.retry_after:g}",
                    "Retry-After-Ms": f"{reply.retry_after * 1000:g}",
                }
            return _error(reply.error, reply.message or f"scripted error {reply.error}", extra)
        calls = [(self._next_call_id(), name, args) for name, args in reply.tool_calls]
        usage = reply.usage(len(raw))
        if body.get("stream"):
            options = body.get("stream_options") or {}
            stream = event_stream(model, reply, calls, usage if options.get("include_usage") else None)
            return 200, "text/event-stream", stream, {}
        return 200, JSON, completion_body(model, reply, calls, usage), {}

    def _next_reply(self, model: str) -> ScriptedReply | None:
        with self._lock:
            if own := self._by_model.get(model):
                return own.popleft()
            if self._shared:
                return self._shared.popleft()
            self.unanswered.append(model)
            return None

    def _next_call_id(self) -> str:
        with self._lock:
            self._calls += 1
            return f"call_{self._calls}"

    def _count(self, started: float) -> None:
        with self._lock:
            self.handled += 1
            self.time_inside_s += time.perf_counter() - started


def _error(status: int, message: str, extra: dict[str, str] | None = None) -> Answer:
    return status, JSON, error_body(status, message), extra or {}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up mid-answer (a timeout test, a closed server) is not news."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def drop_connections(self) -> None:
        with self.connections_lock:
            for connection in self.connections:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    continue  # the client closed it first
            self.connections.clear()


class _Handler(BaseHTTPRequestHandler):
    """HTTP only: read the request, let the fake answer, write the answer in one piece."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)
            self.server.fake.connections += 1

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        super().finish()

    def parse_request(self) -> bool:
        self.started = time.perf_counter()  # the request line has just been read
        return super().parse_request()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests assert on the records, not on a log."""

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        try:
            length = self.headers.get("Content-Length", "0")
            raw = self.rfile.read(int(length)) if length.isdigit() else b""
            status, content_type, body, extra = self.server.fake._answer(
                method, self.path, self.headers.items(), raw
            )
            lines = [
                f"HTTP/1.1 {status} {PHRASES.get(status, 'Error')}",
                f"Content-Type: {content_type}",
                f"Content-Length: {len(body)}",
                *(f"{name}: {value}" for name, value in extra.items()),
            ]
            if self.close_connection:
                lines.append("Connection: close")
        finally:
            # Counted before the answer leaves: a client that has its answer sees the count.
            self.server.fake._count(self.started)
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
