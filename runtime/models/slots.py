"""Building a `ChatModel` from a configuration slot, the API key resolved.

The slot is anything shaped like `connectors.config.ModelSlot` (runtime/ does not import
connectors/, so `SlotConfig` is a protocol). The key comes from the slot's `api_key` (secrets
file or the environment, as loaded), else from the variable `api_key_env` names. A slot with no
key but an `api_base` is a local server (ollama, vLLM) that usually wants none: it gets a
placeholder key, because the OpenAI client refuses to send a request without one. A slot with
neither is a mistake, reported before any request as one `ModelAuthError` line that says which
variable to set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Protocol

from runtime.models.chat_model import ChatModel
from runtime.models.errors import ModelAuthError
from runtime.models.retry import RetryPolicy
from runtime.models.settings import LOCAL_SERVER_KEY, ModelSettings


class Secret(Protocol):
    def get_secret_value(self) -> str: ...


class SlotConfig(Protocol):
    """What `model_from_slot` reads; `connectors.config.ModelSlot` has this shape."""

    @property
    def model(self) -> str: ...
    @property
    def api_base(self) -> str | None: ...
    @property
    def api_key_env(self) -> str | None: ...
    @property
    def api_key(self) -> Secret | None: ...
    @property
    def temperature(self) -> float: ...
    @property
    def max_tokens(self) -> int: ...
    @property
    def fallbacks(self) -> Sequence[str]: ...


def model_from_slot(
    slot: SlotConfig,
    environ: Mapping[str, str] | None = None,
    *,
    timeout_s: float = 120.0,
    connect_timeout_s: float = 10.0,
    retry: RetryPolicy | None = None,
) -> ChatModel:
    """A `ChatModel` for `slot`; raises `ModelAuthError` when no key can be found and the slot
    has no api_base."""
    settings = ModelSettings(
        model=slot.model,
        api_base=slot.api_base,
        api_key=resolve_api_key(slot, os.environ if environ is None else environ),
        api_key_env=slot.api_key_env,
        temperature=slot.temperature,
        max_tokens=slot.max_tokens,
        fallbacks=tuple(slot.fallbacks),
        timeout_s=timeout_s,
        connect_timeout_s=connect_timeout_s,
        retry=retry or RetryPolicy(),
    )
    return ChatModel(settings)


def resolve_api_key(slot: SlotConfig, environ: Mapping[str, str]) -> str:
    if slot.api_key is not None and slot.api_key.get_secret_value():
        return slot.api_key.get_secret_value()
    if slot.api_key_env and environ.get(slot.api_key_env):
        return environ[slot.api_key_env]
    if slot.api_base:
        return LOCAL_SERVER_KEY
    if slot.api_key_env:
        raise ModelAuthError(
            f"{slot.model}: no API key: set the environment variable {slot.api_key_env} "
            "(or api_key in secrets.toml), or set api_base for a local server",
            model=slot.model,
        )
    raise ModelAuthError(
        f"{slot.model}: no API key and no api_base: set api_key_env to the variable that holds "
        "the key, or api_base for a local server",
        model=slot.model,
    )
