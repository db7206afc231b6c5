"""The model-call exceptions.

```
ModelError                    a model call that produced no reply (or a bad model string)
 +-- ModelAuthError           no API key, or the server refused it: says which variable to set
 +-- ModelUnreachable         connection refused, name not resolved, connection lost: names api_base
 |    +-- ModelTimeout        connected, but no answer within the timeout
 +-- ModelRateLimited         HTTP 429, still after every retry
 +-- ModelResponseError       any other error status (`status`), or a reply that cannot be read
```

Invariants: a message is one line (newlines folded, long provider text cut) and never holds an API
key: `scrub` is applied by whoever builds a message from provider text (memory's redactor, the
same one trajectories use, with the slot's own key shown masked). Errors are raised without
the provider's exception chained (`from None`), so a traceback shows no third-party noise that
could quote the request. `transient` says whether the same call may succeed if repeated.
"""

from __future__ import annotations

from memory import mask, redact

MAX_MESSAGE_CHARS = 400


class ModelError(Exception):
    """Base of every error raised by runtime.models."""

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        transient: bool = False,
        retry_after_s: float | None = None,
    ) -> None:
        line = " ".join(message.split())
        if len(line) > MAX_MESSAGE_CHARS:
            line = line[: MAX_MESSAGE_CHARS - 1] + "…"
        super().__init__(line)
        self.model = model
        self.transient = transient
        self.retry_after_s = retry_after_s


class ModelAuthError(ModelError):
    """The API key is missing or was refused; the message names where the key comes from."""


class ModelUnreachable(ModelError):
    """The server could not be reached at all; the message names the api_base."""


class ModelTimeout(ModelUnreachable):
    """The server took longer than the configured timeout to answer."""


class ModelRateLimited(ModelError):
    """The provider kept answering 429 after every retry."""


class ModelResponseError(ModelError):
    """The server answered with an error status (`status`) or an unreadable reply."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        model: str | None = None,
        transient: bool = False,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message, model=model, transient=transient, retry_after_s=retry_after_s)
        self.status = status


def scrub(text: str, secret: str | None) -> str:
    """`text` with `secret` masked (`sk-…abcd`: which key was refused), and every other secret
    redacted."""
    if secret:
        text = text.replace(secret, mask(secret))
    return redact(text).text
