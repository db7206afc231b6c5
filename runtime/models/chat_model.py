"""`ChatModel`: one model slot (planner, executor or judge), called through litellm, or through
the openai SDK directly for an OpenAI-compatible server (`openai/...` with an api_base; see
openai_compatible.py).

A call walks the chain `[current model, *fallbacks]`. Each model gets up to `retry.max_retries`
repeats of transient failures (see retry.py), then the next model is tried. When every model
failed, the first model's error is raised (its type says what is wrong with the configured model)
with each fallback's reason appended to its one-line message.

Invariants:
- litellm's and the openai client's own retries are off (`num_retries=0`, `max_retries=0`): one
  retry policy, ours, so that waits are bounded and visible.
- A stream is retried and failed over only until its first chunk has arrived; after that a
  failure is raised, since text already shown cannot be taken back.
- litellm is imported only when a model that needs it is tried.
- Provider exceptions never escape: they become `ModelError`s (provider_errors.py). Anything
  else (a bug) propagates untouched.
- `use(model)` changes the model for the next call; calls already running keep theirs.
"""

from __future__ import annotations

import asyncio
import functools
import random
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from types import ModuleType
from typing import Any, TypeVar

from runtime.models import openai_compatible
from runtime.models.errors import MAX_MESSAGE_CHARS, ModelError
from runtime.models.litellm_setup import load_litellm
from runtime.models.provider_errors import provider_errors, to_model_error
from runtime.models.replies import ModelReply, StreamEvent, TextDelta
from runtime.models.responses import StreamAssembler, reply_from_response
from runtime.models.settings import ModelSettings

T = TypeVar("T")
MODEL_STRING = re.compile(r"[A-Za-z0-9_.-]+/\S+")


class ChatModel:
    """A chat model with retries and fallbacks; see the module docstring."""

    def __init__(self, settings: ModelSettings, *, rng: random.Random | None = None) -> None:
        check_model_string(settings.model)
        for fallback in settings.fallbacks:
            check_model_string(fallback)
        self.settings = settings
        self._model = settings.model
        self._rng = rng or random.Random()
        self._timeout: object | None = None  # an httpx.Timeout, made on first use

    @property
    def model(self) -> str:
        """The model string the next call tries first."""
        return self._model

    @property
    def chain(self) -> tuple[str, ...]:
        """Every model the next call may try, in order."""
        return tuple(dict.fromkeys((self._model, *self.settings.fallbacks)))

    def use(self, model: str) -> None:
        """Switch to another model (a litellm model string) from the next call on."""
        check_model_string(model)
        self._model = model

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> ModelReply:
        """One whole reply to `messages` (OpenAI chat format), maybe with calls to `tools`."""
        started = time.perf_counter()

        async def attempt(model: str) -> ModelReply:
            response = await self._request(model, messages, tools)
            return reply_from_response(response, model, time.perf_counter() - started)

        return await self._with_fallbacks(attempt)

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> AsyncIterator[StreamEvent]:
        """`TextDelta`s as the reply's text arrives, then the whole `ModelReply`."""
        started = time.perf_counter()

        async def open_stream(model: str) -> tuple[str, Any, Any]:
            response = await self._request(model, messages, tools, stream=True)
            try:
                first = await anext(response, None)  # errors surface by the first chunk
            except BaseException:
                await response.aclose()
                raise
            return model, response, first

        model, response, chunk = await self._with_fallbacks(open_stream)
        assembler = StreamAssembler()
        failure: ModelError | None = None
        try:
            while chunk is not None:
                if text := assembler.add(chunk):
                    yield TextDelta(text)
                chunk = await anext(response, None)
        except provider_errors() as exc:
            failure = to_model_error(exc, model, self.settings)
        finally:
            await response.aclose()
        if failure is not None:
            raise failure
        yield assembler.reply(model, time.perf_counter() - started)

    async def _with_fallbacks(self, attempt: Callable[[str], Awaitable[T]]) -> T:
        failures: list[ModelError] = []
        for model in self.chain:
            try:
                if not openai_compatible.speaks_openai(model, self.settings):
                    check_provider(model, known_providers(await load_litellm()))
                return await self._with_retries(model, attempt)
            except ModelError as error:
                failures.append(error)
        raise _all_failed(failures)

    async def _with_retries(self, model: str, attempt: Callable[[str], Awaitable[T]]) -> T:
        caught = provider_errors()
        retry = 0
        while True:
            try:
                return await attempt(model)
            except caught as exc:
                error = to_model_error(exc, model, self.settings)
            retry += 1
            delay = self.settings.retry.delay_s(retry, error, self._rng)
            if delay is None:
                raise error
            await asyncio.sleep(delay)

    async def _request(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        stream: bool = False,
    ) -> Any:
        """One provider call: a response, or a stream of chunks (provider exceptions raised)."""
        if openai_compatible.speaks_openai(model, self.settings):
            return await openai_compatible.create(model, self.settings, messages, tools, stream=stream)
        litellm = await load_litellm()
        return await litellm.acompletion(**self._arguments(model, messages, tools, stream=stream))

    def _arguments(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        stream: bool = False,
    ) -> dict[str, Any]:
        settings = self.settings
        if self._timeout is None:
            import httpx

            self._timeout = httpx.Timeout(settings.timeout_s, connect=settings.connect_timeout_s)
        arguments: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "timeout": self._timeout,
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": True,  # a provider that lacks a parameter gets the call without it
        }
        optional = {
            "api_base": settings.api_base,
            "api_key": settings.api_key,
            "temperature": settings.temperature,
            "max_tokens": settings.max_tokens,
            "tools": tools or None,
        }
        arguments.update({name: value for name, value in optional.items() if value is not None})
        if stream:
            arguments["stream"] = True
            arguments["stream_options"] = {"include_usage": True}
        return arguments


def check_model_string(model: str) -> None:
    if not MODEL_STRING.fullmatch(model):
        raise ModelError(
            f"{model!r} is not a model string: write 'provider/name', "
            "like 'openai/gpt-4o-mini', 'ollama/qwen3:8b' or 'hosted_vllm/Qwen/Qwen3-8B'"
        )


def check_provider(model: str, providers: frozenset[str]) -> None:
    provider = model.split("/", 1)[0]
    if provider not in providers:
        raise ModelError(
            f"{model}: litellm knows no provider {provider!r}; use one like 'openai', "
            "'anthropic', 'ollama' or 'hosted_vllm' (all: docs.litellm.ai/docs/providers)",
            model=model,
        )


@functools.cache
def known_providers(litellm: ModuleType) -> frozenset[str]:
    return frozenset(str(getattr(provider, "value", provider)) for provider in litellm.provider_list)


def _all_failed(failures: list[ModelError]) -> ModelError:
    """The first model's error, its message extended with why each fallback failed too."""
    first = failures[0]
    if len(failures) > 1:
        line = "; then ".join(str(failure) for failure in failures)
        limit = MAX_MESSAGE_CHARS * 2
        first.args = (line if len(line) <= limit else line[: limit - 1] + "…",)
    return first
