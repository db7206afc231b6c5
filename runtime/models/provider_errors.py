"""Turning litellm's (and openai's, and httpx's) exceptions into `ModelError`s.

The kind is read from the exception itself, never from its message text: the HTTP status when
there is one, else the exception chain (litellm reports a refused connection as a 500 whose chain
holds `openai.APIConnectionError` and, below it, `ConnectionRefusedError`). A refused connection
or an unknown host is not transient (repeating it only delays the failover); a lost connection,
a timeout, 408, 409, 429 and 5xx are. Provider text kept in a message is scrubbed of the key.
"""

from __future__ import annotations

import email.utils
import functools
import re
import socket
import time
from collections.abc import Iterator, Mapping
from types import ModuleType

from runtime.models.errors import (
    ModelAuthError,
    ModelError,
    ModelRateLimited,
    ModelResponseError,
    ModelTimeout,
    ModelUnreachable,
    scrub,
)
from runtime.models.settings import ModelSettings

TRANSIENT_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 524, 529})
# litellm's prefixes, "litellm.RateLimitError: RateLimitError: OpenAIException - the text", and the
# openai SDK's, "Error code: 429 - the text".
_PREFIXES = re.compile(
    r"^(?:litellm\.\w+:\s*)?(?:\w+Error:\s*)?(?:\w+Exception\s*-\s*)?(?:Error code: \d+ - )?"
)


def provider_errors() -> tuple[type[BaseException], ...]:
    """The exception types a provider call raises for provider trouble (imported late: these
    modules load with the first call). Anything else is a bug and propagates as it is."""
    import openai

    return (openai.APIError, *(module.HTTPError for module in _httpx_modules()))


def to_model_error(exc: BaseException, model: str, settings: ModelSettings) -> ModelError:
    import openai

    httpx_modules = _httpx_modules()
    connection_errors = (openai.APIConnectionError, *(module.TransportError for module in httpx_modules))
    timeouts = (openai.APITimeoutError, *(module.TimeoutException for module in httpx_modules))
    chain = list(_chain(exc))
    # A refused connection first: an HTTP transport may report it as a connect timeout (the openai
    # SDK's aiohttp transport raises httpx2.ConnectTimeout over ConnectionRefusedError).
    refused = any(isinstance(link, ConnectionRefusedError) for link in chain)
    if not refused and any(isinstance(link, timeouts) for link in chain):
        return ModelTimeout(
            f"{model}: no answer from {settings.where} within {settings.timeout_s:g} s",
            model=model,
            transient=True,
        )
    if any(isinstance(link, connection_errors) for link in chain):
        return _unreachable(chain, model, settings)
    detail = _detail(exc, settings.api_key)
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        return ModelResponseError(f"{model}: unreadable reply from {settings.where}: {detail}", model=model)
    retry_after = _retry_after_s(getattr(getattr(exc, "response", None), "headers", None))
    if status in (401, 403):
        source = settings.api_key_env or "the slot's api_key"
        return ModelAuthError(
            f"{model}: {settings.where} refused the API key (HTTP {status}: {detail}); check {source}",
            model=model,
        )
    if status == 429:
        return ModelRateLimited(
            f"{model}: rate limited by {settings.where} (HTTP 429: {detail})",
            model=model,
            transient=True,
            retry_after_s=retry_after,
        )
    return ModelResponseError(
        f"{model}: HTTP {status} from {settings.where}: {detail}",
        status=status,
        model=model,
        transient=status in TRANSIENT_STATUSES,
        retry_after_s=retry_after,
    )


@functools.cache
def _httpx_modules() -> tuple[ModuleType, ...]:
    """httpx, and httpx2 where the openai SDK is built on it (a stream cut mid-way raises the
    HTTP library's own error, unwrapped by the SDK)."""
    import httpx

    try:
        import httpx2
    except ImportError:
        return (httpx,)
    return (httpx, httpx2)


def _unreachable(chain: list[BaseException], model: str, settings: ModelSettings) -> ModelError:
    if any(isinstance(link, ConnectionRefusedError) for link in chain):
        why, hint, transient = "connection refused", "; is the server running?", False
    elif any(isinstance(link, socket.gaierror) for link in chain):
        why, hint, transient = "host name not found", "; check api_base and the network", False
    else:
        why, hint, transient = "connection failed", "", True
    return ModelUnreachable(
        f"{model}: cannot reach {settings.where}: {why}{hint}", model=model, transient=transient
    )


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__


def _detail(exc: BaseException, api_key: str | None) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return scrub(_PREFIXES.sub("", str(text)).strip(), api_key)


def _retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from `retry-after-ms` or `retry-after` (seconds or an HTTP date)."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return max(0.0, float(headers[name]) * scale)
        except (KeyError, ValueError):
            continue
    date = email.utils.parsedate_tz(headers.get("retry-after") or "")
    return max(0.0, email.utils.mktime_tz(date) - time.time()) if date else None
