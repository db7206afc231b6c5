"""OpenAI-compatible servers, called through the openai SDK directly instead of litellm.

An `openai/<name>` model with an `api_base` is a server that speaks OpenAI's chat completions
(vLLM, llama.cpp, ollama's /v1, a proxy, the fake in tests). For it litellm only strips the
`openai/` prefix and hands the request to this same SDK, after per-call bookkeeping of its own
(parameter mapping, logging callbacks, a cost lookup, a worker-thread hop) that cost ~2 ms of
CPU a call in bench/daemon.py, more than the request itself. So such a call goes straight to an
`AsyncOpenAI` client. Every other model string (anthropic/, ollama/, hosted_vllm/, and openai/
without an api_base, where litellm maps parameters per OpenAI model family) goes through litellm.

Invariants:
- The request is what litellm sends such a server: the name without `openai/`, the messages,
  the tools, temperature and max_tokens when set, `stream_options.include_usage` when streaming.
  It is posted as written, with the SDK's public `post`: `chat.completions.create` first walks
  every message and tool schema against its typed parameter definitions, a transform that changes
  nothing in plain JSON and cost ~3 ms a call with temper's system prompt and tool schemas.
- The SDK's own retries are off (`max_retries=0`): chat_model.py's policy is the only one.
- Replies and errors are the SDK's own types, the shapes responses.py and provider_errors.py
  read for litellm too (litellm returns the same shapes and wraps the same exceptions).
- One client per server, API key and timeouts on each event loop, kept open so its connection
  pool is reused; `close_clients()` closes the running loop's clients (the agent's `close`). A
  client whose loop ended without that stays referenced here: were it collected, the SDK would
  try to close its connections on whichever loop runs then, and fail.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from types import ModuleType
from typing import Any

from runtime.models.settings import LOCAL_SERVER_KEY, ModelSettings

PREFIX = "openai/"

_ClientKey = tuple[asyncio.AbstractEventLoop, str, str, float, float]
_clients: dict[_ClientKey, Any] = {}  # -> openai.AsyncOpenAI
_chat_types: ModuleType | None = None


def speaks_openai(model: str, settings: ModelSettings) -> bool:
    """Whether `model` is called directly here (else through litellm)."""
    return settings.api_base is not None and model.startswith(PREFIX)


async def create(
    model: str,
    settings: ModelSettings,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    *,
    stream: bool = False,
) -> Any:
    """A chat completion (an `AsyncStream` of chunks when `stream`) from `model`'s server."""
    arguments: dict[str, Any] = {
        "model": model.removeprefix(PREFIX),
        "messages": messages,
    }
    optional = {
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "tools": tools or None,
    }
    arguments.update({name: value for name, value in optional.items() if value is not None})
    if stream:
        arguments["stream"] = True
        arguments["stream_options"] = {"include_usage": True}
    chat = await _load_chat_types()  # openai.types.chat
    from openai import AsyncStream  # imported with the types, at once

    return await _client(settings).post(
        "/chat/completions",
        body=arguments,
        cast_to=chat.ChatCompletion,
        stream=stream,
        stream_cls=AsyncStream[chat.ChatCompletionChunk],  # type: ignore[name-defined]  # a module loaded at run time
    )


def _aiohttp_client(openai: ModuleType, timeout: Any) -> Any:
    """The SDK's aiohttp transport (aiohttp is a dependency of temper's): ~0.5 ms less CPU a call
    than its default httpx transport on anyio, the largest share of the daemon's CPU per message
    (bench/daemon.py). None (the SDK's default) where the SDK was installed without it."""
    aiohttp_client = getattr(openai, "DefaultAioHttpClient", None)  # absent from older SDKs
    try:
        return None if aiohttp_client is None else aiohttp_client(timeout=timeout)
    except RuntimeError:  # the SDK's aiohttp extra is missing
        return None


async def close_clients() -> None:
    """Close the clients made on the running event loop."""
    loop = asyncio.get_running_loop()
    for key in [key for key in _clients if key[0] is loop]:
        await _clients.pop(key).close()


async def _load_chat_types() -> ModuleType:
    """`openai.types.chat`; the first call imports the SDK (about a second) in a worker thread,
    so that the event loop keeps serving meanwhile."""
    global _chat_types
    if _chat_types is None:
        _chat_types = await asyncio.to_thread(importlib.import_module, "openai.types.chat")
    return _chat_types


def _client(settings: ModelSettings) -> Any:
    assert settings.api_base is not None, "speaks_openai() first"
    # litellm's order: the slot's key, then OPENAI_API_KEY; a keyless local server gets a placeholder.
    api_key = settings.api_key or os.environ.get("OPENAI_API_KEY") or LOCAL_SERVER_KEY
    loop = asyncio.get_running_loop()
    key = (
        loop,
        settings.api_base,
        api_key,
        settings.timeout_s,
        settings.connect_timeout_s,
    )
    client = _clients.get(key)
    if client is None or client.is_closed():
        import openai

        timeout = openai.Timeout(settings.timeout_s, connect=settings.connect_timeout_s)
        # The key as a default header: `post` sends no SDK authentication of its own.
        client = openai.AsyncOpenAI(
            base_url=settings.api_base,
            api_key=api_key,
            max_retries=0,
            timeout=timeout,
            default_headers={"Authorization": f"Bearer {api_key}"},
            http_client=_aiohttp_client(openai, timeout),
        )
        _clients[key] = client
    return client
