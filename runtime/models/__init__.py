"""Chat models: the planner, executor and judge slots, reached through litellm (or the openai SDK
directly, for an OpenAI-compatible server: `openai/...` with an api_base).

    model = model_from_slot(config.models.planner)         # the key resolved, or ModelAuthError
    reply = await model.complete(messages, tools)          # ModelReply: text, tool_calls, usage
    async for event in model.stream(messages, tools):      # TextDelta..., then one ModelReply
        ...
    model.use("ollama/qwen3:8b")                           # `/model` in chat
    count_tokens(messages, tools, model.model)             # offline, for prompt overhead
    await close_model_clients()                            # at shutdown: the kept-open connections

Any model string litellm knows works (`openai/...`, `anthropic/...`, `ollama/...`,
`hosted_vllm/...`); `openai/<name>` with `api_base` reaches any OpenAI-compatible server.
Transient failures are retried with backoff (Retry-After honoured), then the fallbacks are tried.
litellm is imported on first use, not by importing this package.

Exceptions (errors.py): ModelError > ModelAuthError, ModelUnreachable (> ModelTimeout),
ModelRateLimited, ModelResponseError. Each message is one line and never holds the API key.
"""

from runtime.models.chat_model import ChatModel
from runtime.models.errors import (
    ModelAuthError,
    ModelError,
    ModelRateLimited,
    ModelResponseError,
    ModelTimeout,
    ModelUnreachable,
)
from runtime.models.openai_compatible import close_clients as close_model_clients
from runtime.models.replies import ModelReply, StreamEvent, TextDelta, ToolCall, Usage
from runtime.models.retry import RetryPolicy
from runtime.models.settings import ModelSettings
from runtime.models.slots import SlotConfig, model_from_slot
from runtime.models.tokens import count_tokens

__all__ = [
    "ChatModel",
    "ModelAuthError",
    "ModelError",
    "ModelRateLimited",
    "ModelReply",
    "ModelResponseError",
    "ModelSettings",
    "ModelTimeout",
    "ModelUnreachable",
    "RetryPolicy",
    "SlotConfig",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "Usage",
    "close_model_clients",
    "count_tokens",
    "model_from_slot",
]
