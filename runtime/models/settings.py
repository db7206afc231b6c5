"""How one model slot is reached: the model string, where, with which key, and call limits."""

from __future__ import annotations

from dataclasses import dataclass, field

from runtime.models.retry import RetryPolicy

LOCAL_SERVER_KEY = "not-needed"  # sent to a keyless local server; it ignores it


@dataclass(frozen=True)
class ModelSettings:
    """Settings for a `ChatModel`. `api_key` is the key itself (resolved by the caller; None lets
    litellm look in the provider's usual variable); `api_key_env` only names where it came from,
    for error messages. Fallbacks share the api_base and key of the slot."""

    model: str
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    fallbacks: tuple[str, ...] = ()
    timeout_s: float = 120.0
    connect_timeout_s: float = 10.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    @property
    def where(self) -> str:
        """The server, as messages name it."""
        return self.api_base or "the provider's default endpoint"
