"""The OpenAI chat wire format, as the fake server writes it: completions, event streams, errors.

`ScriptedReply` is one answer queued by a test; the functions turn it into response bodies the
real openai client (and litellm over it) parse: `chat.completion` JSON, `chat.completion.chunk`
server-sent events ending in `data: [DONE]`, and `{"error": {...}}` bodies. Token counts are
cheap approximations (bytes / 4) unless the reply fixes them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}
Call = tuple[str, str, str]  # (id, name, arguments as JSON text)


@dataclass(frozen=True)
class ScriptedReply:
    """One queued answer: text and/or tool calls, or an HTTP error."""

    text: str | tuple[str, ...] | None = None  # a tuple is the exact stream chunks
    tool_calls: tuple[tuple[str, str], ...] = ()  # (name, arguments as JSON text)
    error: int | None = None
    message: str | None = None
    retry_after: float | None = None
    delay: float = 0.0
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @property
    def full_text(self) -> str | None:
        return "".join(self.text) if isinstance(self.text, tuple) else self.text

    @property
    def finish(self) -> str:
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")

    def text_chunks(self) -> list[str]:
        """Stream deltas: the given chunks, else the text cut after each space."""
        if isinstance(self.text, tuple):
            return list(self.text)
        if not self.text:
            return []
        pieces = self.text.split(" ")
        return [piece + " " for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])

    def usage(self, request_bytes: int) -> dict[str, int]:
        produced = len(self.full_text or "") + sum(len(n) + len(a) for n, a in self.tool_calls)
        prompt = request_bytes // 4 if self.prompt_tokens is None else self.prompt_tokens
        completion = produced // 4 + 1 if self.completion_tokens is None else self.completion_tokens
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }


def completion_body(model: str, reply: ScriptedReply, calls: list[Call], usage: dict[str, int]) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": reply.full_text}
    if calls:
        message["tool_calls"] = [
            {"id": id_, "type": "function", "function": {"name": name, "arguments": args}}
            for id_, name, args in calls
        ]
    body = {
        **_envelope(model, "chat.completion"),
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish}],
        "usage": usage,
    }
    return json.dumps(body).encode()


def event_stream(model: str, reply: ScriptedReply, calls: list[Call], usage: dict[str, int] | None) -> bytes:
    """The whole stream: a role chunk, text deltas, tool-call deltas (each call's arguments in
    two pieces), a finish chunk, a usage chunk when `usage` is given, then `[DONE]`."""

    def deltas() -> Iterator[tuple[dict[str, Any], str | None]]:
        yield {"role": "assistant", "content": ""}, None
        for piece in reply.text_chunks():
            yield {"content": piece}, None
        for index, (id_, name, args) in enumerate(calls):
            head = {"index": index, "id": id_, "type": "function"}
            yield {"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]}, None
            half = len(args) // 2
            for part in (args[:half], args[half:]):
                yield {"tool_calls": [{"index": index, "function": {"arguments": part}}]}, None
        yield {}, reply.finish

    envelope = _envelope(model, "chat.completion.chunk")
    events = [
        {**envelope, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        for delta, finish in deltas()
    ]
    if usage is not None:
        events.append({**envelope, "choices": [], "usage": usage})
    lines = [f"data: {json.dumps(event)}\n\n" for event in events]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


def error_body(status: int, message: str) -> bytes:
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    error = {"message": message, "type": kind, "param": None, "code": str(status)}
    return json.dumps({"error": error}).encode()


def _envelope(model: str, kind: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{time.time_ns()}",
        "object": kind,
        "created": int(time.time()),
        "model": model,
    }
