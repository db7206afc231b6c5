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

The wire format lives in openai_wire.py, the HTTP in http_server.py (a stdlib threaded server,
so synchronous tests and asyncio code use it alike); this module is the script and the records.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from typing import Any

from tests.fakes.http_server import Request, Response, ThreadedFake, json_response
from tests.fakes.openai_wire import ScriptedReply, completion_body, error_body, event_stream

__all__ = ["FakeOpenAI"]

CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"


class FakeOpenAI(ThreadedFake):
    """The server; see the module docstring. Start it with `with`, `async with` or `start()`.

    Records, in arrival order: `requests` (chat request bodies), `request_headers` (their headers,
    names lower-cased), `unanswered` (models of requests that found no reply), `handled` (requests
    of any kind), `connections` (TCP connections accepted) and `time_inside_s` (seconds spent
    answering them, all together).
    """

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self.unanswered: list[str] = []
        self.handled = 0
        self.time_inside_s = 0.0
        self._lock = threading.Lock()
        self._shared: deque[ScriptedReply] = deque()
        self._by_model: dict[str, deque[ScriptedReply]] = {}
        self._calls = 0

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

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as base_url, and litellm as api_base."""
        return f"{self.url}/v1"

    # Answering (called from the server's threads) ------------------------------------------

    def _answer(self, request: Request) -> Response:
        method, path, raw = request.method, request.path.rstrip("/"), request.body
        if method == "GET" and path == MODELS_PATH:
            with self._lock:
                names = ["fake-model", *self._by_model]
            data = [{"id": name, "object": "model", "owned_by": "fake"} for name in names]
            return json_response({"object": "list", "data": data})
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
            self.request_headers.append({name.lower(): value for name, value in request.headers.items()})
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
            return Response(200, stream, "text/event-stream")
        return Response(200, completion_body(model, reply, calls, usage))

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

    def _served(self, seconds: float) -> None:
        with self._lock:
            self.handled += 1
            self.time_inside_s += seconds


def _error(status: int, message: str, extra: dict[str, str] | None = None) -> Response:
    return Response(status, error_body(status, message), headers=extra or {})
