"""Reading litellm's responses (whole, or chunk by chunk) into `ModelReply`.

litellm normalises every provider to the OpenAI shape, so this is the only module that knows that
shape. A stream's tool calls arrive in pieces keyed by `index`: the first piece carries the id and
name, later pieces append to the arguments text. Missing ids (some local servers send none) become
`call_<index>`; missing usage becomes zeros.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.models.errors import ModelResponseError
from runtime.models.replies import ModelReply, ToolCall, Usage


def reply_from_response(response: Any, model: str, latency_s: float) -> ModelReply:
    """A non-streamed litellm `ModelResponse` as a `ModelReply`."""
    if not response.choices:
        raise ModelResponseError(f"{model}: the reply has no choices", model=model)
    choice = response.choices[0]
    message = choice.message
    calls = tuple(
        ToolCall(
            id=call.id or f"call_{index}",
            name=call.function.name or "",
            arguments=call.function.arguments or "",
        )
        for index, call in enumerate(message.tool_calls or [])
    )
    return ModelReply(
        text=message.content or "",
        tool_calls=calls,
        finish_reason=choice.finish_reason or ("tool_calls" if calls else "stop"),
        model=model,
        usage=_usage(getattr(response, "usage", None)),
        latency_s=latency_s,
    )


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamAssembler:
    """Collects stream chunks; `add` returns each chunk's new text, `reply` the whole answer."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)

    def add(self, chunk: Any) -> str:
        if (usage := getattr(chunk, "usage", None)) is not None:
            self.usage = _usage(usage)
        if not chunk.choices:
            return ""
        choice = chunk.choices[0]
        self.finish_reason = choice.finish_reason or self.finish_reason
        delta = choice.delta
        for piece in getattr(delta, "tool_calls", None) or []:
            partial = self.calls.setdefault(piece.index or 0, _PartialCall())
            partial.id = piece.id or partial.id
            if piece.function is not None:
                partial.name = piece.function.name or partial.name
                partial.arguments.append(piece.function.arguments or "")
        text = delta.content or ""
        if text:
            self.text.append(text)
        return text

    def reply(self, model: str, latency_s: float) -> ModelReply:
        calls = tuple(
            ToolCall(
                id=partial.id or f"call_{index}",
                name=partial.name,
                arguments="".join(partial.arguments),
            )
            for index, partial in sorted(self.calls.items())
        )
        return ModelReply(
            text="".join(self.text),
            tool_calls=calls,
            finish_reason=self.finish_reason or ("tool_calls" if calls else "stop"),
            model=model,
            usage=self.usage,
            latency_s=latency_s,
        )


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    return Usage(
        prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
        completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
    )
