"""The wire format of `temper serve executor`: the part of vLLM's OpenAI-compatible API temper uses.

Requests are validated by the pydantic models below (unknown fields are ignored, as vLLM does);
responses are built by the `*_body` functions. Beyond plain OpenAI:

- `return_token_ids: true` adds `prompt_token_ids` (chat: top level; completions: per choice) and
  `choices[].token_ids`: the exact ids the model was conditioned on and sampled;
- `/v1/completions` takes `prompt` as text or as a list of token ids;
- logprobs are raw model log-probabilities (before temperature), vLLM's default.

Features a request may ask for that this server does not have (n > 1, streaming, stop strings,
echo, tools) are refused with 400 rather than silently ignored.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from itertools import accumulate
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator, model_validator

from runtime.executor.completion import SamplingParams
from runtime.executor.sampling import SampledTokens
from runtime.executor.tokenization import ExecutorTokenizer

MAX_TOP_LOGPROBS = 20
ERROR_KINDS = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
}
Seed = Annotated[int, Field(ge=-(2**63), lt=2**64)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    model: str | None = None  # None: the base model
    temperature: float = Field(1.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    max_tokens: int | None = Field(None, ge=1)
    seed: Seed | None = None
    return_token_ids: bool = False
    n: int = 1
    stream: bool = False
    stop: str | list[str] | None = None

    @model_validator(mode="after")
    def _supported(self) -> Self:
        if self.n != 1:
            raise ValueError("n must be 1: this server samples one choice per request")
        if self.stream:
            raise ValueError("streaming is not supported: send stream false")
        if self.stop:
            raise ValueError("stop strings are not supported: the model stops at its eos token")
        return self

    def sampling(self, default_max_tokens: int) -> SamplingParams:
        """The sampling parameters; `default_max_tokens` when the request leaves the limit open."""
        return SamplingParams(
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=self._max_tokens() or default_max_tokens,
            seed=self.seed,
        )

    def _max_tokens(self) -> int | None:
        return self.max_tokens


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(_Request):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=MAX_TOP_LOGPROBS)
    tools: list[Any] | None = None

    @model_validator(mode="after")
    def _no_tools(self) -> Self:
        if self.tools:
            raise ValueError("tools are not supported: the executor answers in text (JSON actions)")
        return self

    def chat_messages(self) -> list[dict[str, Any]]:
        return [message.model_dump(exclude_none=True) for message in self.messages]

    def _max_tokens(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens


class CompletionRequest(_Request):
    prompt: str | Annotated[list[StrictInt], Field(min_length=1)]
    logprobs: int | None = Field(None, ge=0, le=MAX_TOP_LOGPROBS)
    echo: bool = False

    @field_validator("prompt")
    @classmethod
    def _not_empty(cls, prompt: str | list[int]) -> str | list[int]:
        if isinstance(prompt, str) and not prompt:
            raise ValueError("the prompt is empty")
        return prompt

    @model_validator(mode="after")
    def _no_echo(self) -> Self:
        if self.echo:
            raise ValueError("echo is not supported: the prompt ids come back with return_token_ids")
        return self


class LoadAdapterRequest(BaseModel):
    lora_name: str = Field(min_length=1)
    lora_path: str = Field(min_length=1)


class UnloadAdapterRequest(BaseModel):
    lora_name: str = Field(min_length=1)


def chat_body(
    request: ChatRequest,
    model: str,
    prompt_ids: list[int],
    sampled: SampledTokens,
    tokenizer: ExecutorTokenizer,
) -> dict[str, Any]:
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": tokenizer.decode(sampled.ids)},
        "logprobs": None,
        "finish_reason": sampled.finish_reason,
    }
    if request.logprobs:
        content = []
        for position, (token_id, logprob) in enumerate(zip(sampled.ids, sampled.logprobs, strict=True)):
            alternatives = sampled.top[position] if sampled.top else []
            content.append(
                {
                    **_token_entry(tokenizer, token_id, logprob),
                    "top_logprobs": [_token_entry(tokenizer, i, lp) for i, lp in alternatives],
                }
            )
        choice["logprobs"] = {"content": content}
    body = {**_envelope("chatcmpl", "chat.completion", model), "choices": [choice]}
    if request.return_token_ids:
        choice["token_ids"] = sampled.ids
        body["prompt_token_ids"] = prompt_ids
    body["usage"] = _usage(prompt_ids, sampled.ids)
    return body


def completion_body(
    request: CompletionRequest,
    model: str,
    prompt_ids: list[int],
    sampled: SampledTokens,
    tokenizer: ExecutorTokenizer,
) -> dict[str, Any]:
    choice: dict[str, Any] = {
        "index": 0,
        "text": tokenizer.decode(sampled.ids),
        "logprobs": None,
        "finish_reason": sampled.finish_reason,
    }
    if request.logprobs is not None:
        tokens = [tokenizer.token_text(token_id) for token_id in sampled.ids]
        offsets = [0, *accumulate(len(token) for token in tokens)][: len(tokens)]
        top = (
            [{tokenizer.token_text(i): lp for i, lp in alternatives} for alternatives in sampled.top]
            if sampled.top
            else [None] * len(tokens)
        )
        choice["logprobs"] = {
            "tokens": tokens,
            "token_logprobs": sampled.logprobs,
            "top_logprobs": top,
            "text_offset": offsets,
        }
    if request.return_token_ids:
        choice["prompt_token_ids"] = prompt_ids
        choice["token_ids"] = sampled.ids
    return {
        **_envelope("cmpl", "text_completion", model),
        "choices": [choice],
        "usage": _usage(prompt_ids, sampled.ids),
    }


def models_body(base: str, max_positions: int, adapters: dict[str, str]) -> dict[str, Any]:
    created = int(time.time())
    data = [_model_entry(base, base, None, max_positions, created)]
    data += [_model_entry(version, path, base, max_positions, created) for version, path in adapters.items()]
    return {"object": "list", "data": data}


def error_body(status: int, message: str) -> dict[str, Any]:
    kind = ERROR_KINDS.get(status, "ServerError")
    return {"error": {"message": message, "type": kind, "param": None, "code": status}}


def validation_message(errors: Sequence[Any]) -> str:
    """One line out of pydantic's error list: where, and what is wrong."""
    parts = []
    for error in errors[:3]:
        where = ".".join(str(part) for part in error["loc"]) or "body"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def _token_entry(tokenizer: ExecutorTokenizer, token_id: int, logprob: float) -> dict[str, Any]:
    text = tokenizer.token_text(token_id)
    return {"token": text, "logprob": logprob, "bytes": list(text.encode())}


def _model_entry(
    name: str, root: str, parent: str | None, max_positions: int, created: int
) -> dict[str, Any]:
    return {
        "id": name,
        "object": "model",
        "created": created,
        "owned_by": "temper",
        "root": root,
        "parent": parent,
        "max_model_len": max_positions,
    }


def _envelope(prefix: str, kind: str, model: str) -> dict[str, Any]:
    return {
        "id": f"{prefix}-{uuid.uuid4().hex}",
        "object": kind,
        "created": int(time.time()),
        "model": model,
    }


def _usage(prompt_ids: list[int], completion_ids: list[int]) -> dict[str, int]:
    return {
        "prompt_tokens": len(prompt_ids),
        "completion_tokens": len(completion_ids),
        "total_tokens": len(prompt_ids) + len(completion_ids),
    }
