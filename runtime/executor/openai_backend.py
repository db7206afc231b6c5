"""`OpenAIBackend`: the executor backend over any OpenAI-compatible server (vLLM, `temper serve
executor`, or a plain one).

    async with OpenAIBackend("http://127.0.0.1:8000/v1", "Qwen/Qwen3-1.7B", tokenizer_dir=d) as b:
        completion = await b.complete(messages, SamplingParams(seed=1))
        await b.load_adapter("v7", "/adapters/v7")           # vLLM runtime LoRA loading

Each call asks `POST {base_url}/chat/completions` for `logprobs: true` and `return_token_ids:
true` and stores exactly what came back: `prompt_token_ids`, `choices[0].token_ids` and
`choices[0].logprobs.content[*].logprob`.

Invariants:
- Ids from the server are never replaced by re-encoding. When the server returns none (a plain
  OpenAI-compatible server), prompt and completion are re-tokenised with the executor's tokenizer
  (`tokenizer_dir`) and the record says `retokenized=True`; returned logprobs are kept only if
  they are one per re-tokenised id, else dropped. Without a tokenizer the ids stay empty.
- Logprobs are dropped too when the server returned a number of them other than one per id: a
  record never pairs a logprob with the wrong token.
- A server that rejects `return_token_ids` as unknown (HTTP 400 naming it) is asked again without
  it, and is not asked for it again.
- `tokenizer_hash` and `chat_template_hash` identify the configured executor tokenizer (which
  should be the served model's own), and are None without one.
- Every failure is an `ExecutorCallError`: `transient` for connection failures, timeouts, 408,
  429 and 5xx. No retries here: the executor loop decides.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import httpx

from runtime.executor.completion import Completion, SamplingParams
from runtime.executor.errors import ExecutorCallError, ExecutorRequestError
from runtime.executor.tokenization import TokenizerOnDemand

TRANSIENT_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


class OpenAIBackend:
    """An `ExecutorBackend` and `AdapterHost` over an OpenAI-compatible server at `base_url`
    (ending in /v1) serving `model`. Close it (`aclose`, or `async with`) when done."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        tokenizer_dir: str | Path | None = None,
        timeout_s: float = 120.0,
        connect_timeout_s: float = 10.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._tokenizer = TokenizerOnDemand(tokenizer_dir)
        self._adapter: str | None = None
        self._asks_token_ids = True
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s)
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    @property
    def adapter_version(self) -> str | None:
        return self._adapter

    async def complete(self, messages: Sequence[dict[str, Any]], sampling: SamplingParams) -> Completion:
        adapter = self._adapter
        started = time.perf_counter()
        tokenizer = await self._tokenizer.get()
        request: dict[str, Any] = {
            "model": adapter or self.model,
            "messages": list(messages),
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "logprobs": True,
        }
        if sampling.seed is not None:
            request["seed"] = sampling.seed
        choice = _read_choice(await self._chat(request))
        prompt_ids, completion_ids = choice.prompt_ids, choice.completion_ids
        retokenized = False
        if prompt_ids is None or completion_ids is None:
            prompt_ids, completion_ids = [], []
            if tokenizer is not None:
                prompt_ids, completion_ids = tokenizer.retokenize(messages, choice.text, choice.finish_reason)
                retokenized = True
        logprobs = choice.logprobs if len(choice.logprobs) == len(completion_ids) else []
        return Completion(
            text=choice.text,
            prompt_ids=prompt_ids,
            completion_ids=completion_ids,
            completion_logprobs=logprobs,
            finish_reason=choice.finish_reason,
            model=self.model,
            adapter_version=adapter,
            retokenized=retokenized,
            tokenizer_hash=tokenizer.hash if tokenizer else None,
            chat_template_hash=tokenizer.chat_template_hash if tokenizer else None,
            latency_s=time.perf_counter() - started,
            sampling=replace(sampling, constrained=False),  # the server samples unconstrained
        )

    # Adapters (vLLM's runtime LoRA endpoints; the path is on the server's machine) -------------

    async def load_adapter(self, version: str, directory: str | Path) -> None:
        """Have the server load a LoRA adapter as `version`, and use it from the next call on."""
        await self._post("/load_lora_adapter", {"lora_name": version, "lora_path": str(directory)})
        self._adapter = version

    async def use_adapter(self, version: str | None) -> None:
        """Sample with `version`, an adapter the server has loaded (asked at /models), or None."""
        if version is not None and version not in await self.served_models():
            raise ExecutorRequestError(
                f"the server has no adapter {version!r} loaded: load it first", status=404
            )
        self._adapter = version

    def pinned(self, version: str | None) -> OpenAIBackend:
        """A view sharing this backend's connection that always asks for `version` (an adapter the
        server has loaded, or None for the base model): one executor run's backend. Close only
        the original."""
        view = copy.copy(self)
        view._adapter = version
        return view

    async def unload_adapter(self, version: str) -> None:
        await self._post("/unload_lora_adapter", {"lora_name": version})
        if self._adapter == version:
            self._adapter = None

    async def served_models(self) -> list[str]:
        """The names the server answers to: base models and loaded adapters."""
        url = self.base_url + "/models"
        try:
            response = await self._client.get(url)
        except httpx.TransportError as exc:
            raise ExecutorCallError(f"cannot reach {url}: {exc}", transient=True) from None
        _raise_for_status(response)
        data = _json_object(response).get("data")
        if not isinstance(data, list):
            raise ExecutorCallError(f"{url} answered no model list")
        return [entry["id"] for entry in data if isinstance(entry, dict) and isinstance(entry.get("id"), str)]

    # HTTP --------------------------------------------------------------------------------------

    async def _chat(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._asks_token_ids:
            try:
                return _json_object(
                    await self._post("/chat/completions", {**request, "return_token_ids": True})
                )
            except ExecutorCallError as error:
                if error.status != 400 or "return_token_ids" not in str(error):
                    raise
                self._asks_token_ids = False  # a server that refuses the field by name
        return _json_object(await self._post("/chat/completions", request))

    async def _post(self, path: str, payload: dict[str, Any]) -> httpx.Response:
        url = self.base_url + path
        try:
            response = await self._client.post(url, json=payload)
        except httpx.TimeoutException:
            raise ExecutorCallError(f"{url}: no answer within the timeout", transient=True) from None
        except httpx.TransportError as exc:
            raise ExecutorCallError(f"cannot reach {url}: {exc}", transient=True) from None
        _raise_for_status(response)
        return response


def _raise_for_status(response: httpx.Response) -> None:
    if response.status_code >= 400:
        raise ExecutorCallError(
            f"{response.url} answered {response.status_code}: {_error_message(response)}",
            status=response.status_code,
            transient=response.status_code in TRANSIENT_STATUSES,
        )


@dataclass(frozen=True)
class _Choice:
    """The first choice of a chat completion; ids are None where the server sent none."""

    text: str
    finish_reason: str  # "stop" or "length"
    prompt_ids: list[int] | None
    completion_ids: list[int] | None
    logprobs: list[float]


def _read_choice(body: dict[str, Any]) -> _Choice:
    try:
        choice = body["choices"][0]
        text = choice["message"].get("content") or ""
        finish = choice.get("finish_reason")
        content = (choice.get("logprobs") or {}).get("content") or []
        logprobs = [float(entry["logprob"]) for entry in content]
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        raise ExecutorCallError(f"the server's reply has no readable first choice ({exc!r})") from None
    if not isinstance(text, str):
        raise ExecutorCallError(f"the server's reply has content of type {type(text).__name__}, not text")
    return _Choice(
        text=text,
        finish_reason="length" if finish == "length" else "stop",
        prompt_ids=_ids(body.get("prompt_token_ids")),
        completion_ids=_ids(choice.get("token_ids")),
        logprobs=logprobs,
    )


def _ids(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        return value
    return None


def _json_object(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        raise ExecutorCallError(f"{response.url} answered something that is not JSON") from None
    if not isinstance(body, dict):
        raise ExecutorCallError(f"{response.url} answered JSON that is not an object")
    return body


def _error_message(response: httpx.Response) -> str:
    """The server's own words: OpenAI's `{"error": {"message"}}`, else the text, cut short."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"][:300]
    if isinstance(error, str):
        return error[:300]
    return response.text[:300]
