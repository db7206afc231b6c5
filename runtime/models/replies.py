"""What a model call gives back: plain dataclasses, free of any provider library's types.

`ModelReply` is the whole answer; a stream yields `TextDelta`s as text arrives and then exactly
one `ModelReply` holding the same text (all deltas joined) and whole tool calls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for; `arguments` is JSON text exactly as the model wrote
    it (possibly invalid: the loop reports a parse error back to the model)."""

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> Any:
        """The arguments as JSON; raises `json.JSONDecodeError` when the model wrote bad JSON."""
        return json.loads(self.arguments) if self.arguments.strip() else {}

    def to_message(self) -> dict[str, Any]:
        """The OpenAI chat format of this call, for an assistant message's `tool_calls`."""
        function = {"name": self.name, "arguments": self.arguments}
        return {"id": self.id, "type": "function", "function": function}


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class ModelReply:
    """A finished answer. `model` is the model string that answered (a fallback, maybe);
    `latency_s` runs from the call to the reply, retries and fallbacks included."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"
    model: str = ""
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0

    def to_message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation (OpenAI chat format)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            message["tool_calls"] = [call.to_message() for call in self.tool_calls]
        return message


@dataclass(frozen=True)
class TextDelta:
    """A piece of reply text, as it streams in."""

    text: str


StreamEvent = TextDelta | ModelReply
