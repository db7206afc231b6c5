"""Redaction of secrets in text before it is stored or exported, and masking for display.

`mask(secret)` is how a secret is shown to people (an error message, `temper doctor`): its kind
when it has a well-known public prefix, and at most its last four characters.

`redact(text, extra_secrets)` replaces every secret it finds with `[REDACTED:<kind>]` and says
which kinds it found. Two sources of secrets:

- configured secrets: exact strings the operator's config holds (API keys, bot tokens),
  handed to the store or exporter; kind `configured`. Strings shorter than
  MIN_CONFIGURED_CHARS are ignored: redacting them would eat ordinary words;
- common key shapes, below in SHAPES: OpenAI and Anthropic keys, AWS access key ids and
  secret-looking 40-character base64 strings, GitHub and Slack tokens, Telegram bot tokens,
  PEM private keys, passwords in URLs and `password=` assignments.

Invariants: the output never contains a configured secret or a match of SHAPES (a
replacement marker matches none of them), and redacting redacted text changes nothing.
Patterns lean towards finding: a false positive costs an episode its place in the training
data (see trajectories.py), a false negative leaks a key into every export.
"""

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

MIN_CONFIGURED_CHARS = 6
MARKER = "[REDACTED:{kind}]"
MIN_MASKED_TAIL_CHARS = 12  # a shorter secret's last four characters give away too much of it
# Public prefixes that name a key's kind (OpenAI-style "sk-", Groq, xAI, Slack): `mask` shows
# these, and no other start of a secret.
_KEY_KIND = re.compile(r"(?:sk|gsk|rk|xai|xox[abpr]|xapp)-")


class WrappedSecret(Protocol):
    """A secret in a wrapper that keeps it out of reprs, such as pydantic's SecretStr."""

    def get_secret_value(self) -> str: ...


def mask(secret: str | WrappedSecret | None) -> str:
    """A secret as it may be shown: `"sk-…abcd"`, `"…abcd"` (no known kind), `"…"` (short),
    `"(not set)"` (None)."""
    if secret is None:
        return "(not set)"
    value = secret if isinstance(secret, str) else secret.get_secret_value()
    if len(value) < MIN_MASKED_TAIL_CHARS:
        return "…"
    kind = _KEY_KIND.match(value)
    return f"{kind.group(0) if kind else ''}…{value[-4:]}"


@dataclass(frozen=True)
class Shape:
    """One kind of secret: a pattern, the group it replaces (0: the whole match), an optional
    second look at a match that the pattern alone cannot decide, and `hints`: lower-case
    strings one of which any match contains. Most text holds no hint, and a substring test
    is ~50x cheaper than a regex scan that starts with a look-behind or a character class."""

    kind: str
    pattern: re.Pattern[str]
    group: int = 0
    accept: Callable[[str], bool] | None = None
    hints: tuple[str, ...] = ()


def _mixed_case_and_digit(candidate: str) -> bool:
    # The shape of an AWS secret access key. Lower-case hex (git and SHA-1 hashes) and
    # ordinary words never have all three.
    return (
        any(c.isupper() for c in candidate)
        and any(c.islower() for c in candidate)
        and any(c.isdigit() for c in candidate)
    )


_NOT_A_VALUE = r"(?![$<{%\[])"  # `$VAR`, `<placeholder>`, `{template}`, `[REDACTED:...]`

# Order matters where shapes overlap: `sk-ant-` before `sk-`, whole PEM blocks first.
SHAPES: tuple[Shape, ...] = (
    Shape(
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
        ),
        hints=("private key",),
    ),
    Shape("anthropic_key", re.compile(r"(?<![\w-])sk-ant-[A-Za-z0-9_-]{20,}"), hints=("sk-ant-",)),
    Shape(
        "openai_key", re.compile(r"(?<![\w-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), hints=("sk-",)
    ),
    Shape(
        "github_token",
        re.compile(r"(?<![\w-])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
        hints=("gh", "github_pat_"),
    ),
    Shape("slack_token", re.compile(r"(?<![\w-])xox[abpr]-[A-Za-z0-9-]{10,}"), hints=("xox",)),
    Shape("telegram_token", re.compile(r"(?<![\w:-])\d{8,10}:[A-Za-z0-9_-]{35}(?![\w-])")),
    Shape(
        "aws_access_key",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"),
        hints=("akia", "asia"),
    ),
    Shape(
        "aws_secret_key",
        re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
        accept=_mixed_case_and_digit,
    ),
    Shape(
        "url_password",
        re.compile(rf"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:{_NOT_A_VALUE}([^\s/@]+)@"),
        1,
        hints=("://",),
    ),
    Shape(
        "password",
        re.compile(rf"\b\w*(?i:passw(?:or)?d|pwd)={_NOT_A_VALUE}([^\s&#'\";,]+)"),
        1,
        hints=("passw", "pwd"),
    ),
    Shape(
        "password",
        re.compile(rf'"\w*(?i:passw(?:or)?d|pwd)"\s*:\s*"{_NOT_A_VALUE}([^"]+)"'),
        1,
        hints=("passw", "pwd"),
    ),
)


@dataclass(frozen=True)
class Redactor:
    """`redact` with a fixed set of configured secrets, compiled once."""

    configured: re.Pattern[str] | None

    @classmethod
    def for_secrets(cls, secrets: Iterable[str]) -> "Redactor":
        kept = sorted({s for s in secrets if len(s) >= MIN_CONFIGURED_CHARS}, key=len, reverse=True)
        return cls(re.compile("|".join(map(re.escape, kept))) if kept else None)

    def text(self, text: str) -> tuple[str, set[str]]:
        found: set[str] = set()
        if self.configured is not None:
            text, count = self.configured.subn(MARKER.format(kind="configured"), text)
            if count:
                found.add("configured")
        lowered = text.lower()
        for shape in SHAPES:
            if not shape.hints or any(hint in lowered for hint in shape.hints):
                text = _substitute(shape, text, found)
        return text, found

    def value(self, value: Any) -> tuple[Any, set[str]]:
        """Redact every string inside JSON-like data (dicts, lists, strings); keys stay as they are."""
        found: set[str] = set()

        def walk(item: Any) -> Any:
            if isinstance(item, str):
                redacted, kinds = self.text(item)
                found.update(kinds)
                return redacted
            if isinstance(item, dict):
                return {key: walk(inner) for key, inner in item.items()}
            if isinstance(item, (list, tuple)):
                return [walk(inner) for inner in item]
            return item

        return walk(value), found


def redact(text: str, extra_secrets: Iterable[str] = ()) -> tuple[str, list[str]]:
    """`text` with every secret replaced by `[REDACTED:<kind>]`, and the kinds found (sorted)."""
    redacted, found = Redactor.for_secrets(extra_secrets).text(text)
    return redacted, sorted(found)


def _substitute(shape: Shape, text: str, found: set[str]) -> str:
    marker = MARKER.format(kind=shape.kind)

    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        if shape.accept is not None and not shape.accept(match.group(shape.group)):
            return whole
        found.add(shape.kind)
        if shape.group == 0:
            return marker
        start = match.start()
        return whole[: match.start(shape.group) - start] + marker + whole[match.end(shape.group) - start :]

    return shape.pattern.sub(replace, text)
