"""Redaction of secrets in text before it is stored or exported, and masking for display.

`mask(secret)` is how a secret is shown to people (an error message, `temper doctor`): its kind
when it has a well-known public prefix, and at most its last four characters.

`redact(text, secrets)` replaces every secret it finds with `[REDACTED:<kind>]`: a `Redaction`
of the new text, the kinds found and how many secrets it replaced. `Redactor.for_secrets(secrets)`
does the same with the configured secrets compiled once (`.text`, and `.value` for JSON-like
data). This is temper's one redactor: trajectories as they are recorded, exports, model error
messages and the learner all use it, and the command policy uses its vocabulary of secret names.
Two sources of secrets:

- configured secrets: exact strings the operator's config holds (API keys, bot tokens), handed
  to the store or exporter, replaced wherever they appear; kind `configured`. Strings shorter
  than MIN_CONFIGURED_CHARS are ignored: redacting them would eat ordinary words;
- detected secrets (memory/redaction/): detect-secrets' provider plugins and keyword detector,
  temper's own key formats (`hf_`, `AIza`, `xai-`, `gsk_`, `glpat-`, `sk_live_`, ...), values
  given to secret-sounding names (`API_KEY=`, `"api_key": "..."`, `password: x`, `--token`),
  bearer and basic credentials, passwords in URLs and on command lines, private key blocks.

Invariants: the output holds no configured secret and nothing a detector finds (a replacement
marker matches no detector), and redacting redacted text changes nothing. Detection leans
towards finding: a false positive costs an episode its place in the training data (see
trajectories.py), a false negative leaks a key into every export. tests/security/secret_corpus.py
measures both; docs/security.md has the figures.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

from .redaction import Detector, Span, detectors

MIN_CONFIGURED_CHARS = 6
MARKER = "[REDACTED:{kind}]"
_MARKERS = re.compile(r"\[REDACTED:\w+\]")
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
class Redaction:
    text: str  # with every secret replaced by its marker
    kinds: tuple[str, ...]  # what was found, sorted: `configured`, `openai_key`, ...
    found: int  # how many secrets were replaced


@dataclass(frozen=True)
class Redactor:
    """`redact` with a fixed set of configured secrets, compiled once."""

    configured: re.Pattern[str] | None = None

    @classmethod
    def for_secrets(cls, secrets: Iterable[str]) -> "Redactor":
        kept = sorted({s for s in secrets if len(s) >= MIN_CONFIGURED_CHARS}, key=len, reverse=True)
        return cls(re.compile("|".join(map(re.escape, kept))) if kept else None)

    def text(self, text: str) -> Redaction:
        found = 0
        kinds: set[str] = set()
        if self.configured is not None:
            text, found = self.configured.subn(MARKER.format(kind="configured"), text)
            if found:
                kinds.add("configured")
        spans = _merged(_detected(text)) if text else []
        if spans:
            parts, last = [], 0
            for start, end, kind in spans:
                parts += [text[last:start], MARKER.format(kind=kind)]
                kinds.add(kind)
                last = end
            text = "".join(parts) + text[last:]
        return Redaction(text, tuple(sorted(kinds)), found + len(spans))

    def value(self, value: Any) -> tuple[Any, frozenset[str]]:
        """Every string inside JSON-like data (dicts, lists, strings) redacted, and the kinds
        found. Keys stay as they are, and say what their value is: `{"api_key": "..."}`."""
        from .redaction.context import judge

        found: set[str] = set()

        def walk(item: Any, key: object = None) -> Any:
            if isinstance(item, str):
                if isinstance(key, str) and item and judge(item, key, 0, len(item), quoted=True):
                    found.add("secret_assignment")
                    return MARKER.format(kind="secret_assignment")
                redaction = self.text(item)
                found.update(redaction.kinds)
                return redaction.text
            if isinstance(item, dict):
                return {name: walk(inner, name) for name, inner in item.items()}
            if isinstance(item, (list, tuple)):
                return [walk(inner) for inner in item]
            return item

        return walk(value), frozenset(found)


def redact(text: str, secrets: Iterable[str] = ()) -> Redaction:
    """`text` with every secret (configured or detected) replaced by `[REDACTED:<kind>]`."""
    return Redactor.for_secrets(secrets).text(text)


def _detected(text: str) -> list[Span]:
    lowered = text.lower()
    hints, plan = _plan()
    present = {hint for hint in hints if hint in lowered}
    spans: list[Span] = []
    for detector, wanted in plan:
        if not wanted or not present.isdisjoint(wanted):
            spans.extend(detector.spans(text))
    if spans and "[redacted:" in lowered:  # what is redacted already stays as it is
        markers = [match.span() for match in _MARKERS.finditer(text)]
        spans = [s for s in spans if not any(s[0] < end and start < s[1] for start, end in markers)]
    return spans


@cache
def _plan() -> tuple[tuple[str, ...], list[tuple[Detector, frozenset[str]]]]:
    """Every detector with its hints, and every hint once: one substring test each per text."""
    plan = [(detector, frozenset(detector.hints)) for detector in detectors()]
    return tuple(sorted({hint for _, wanted in plan for hint in wanted})), plan


def _merged(spans: list[Span]) -> list[Span]:
    """Overlapping spans as one, in order; the kind of the one that starts first (the longest
    of those that start together)."""
    merged: list[Span] = []
    for start, end, kind in sorted(spans, key=lambda s: (s[0], -s[1])):
        if merged and start < merged[-1][1]:
            first_start, first_end, first_kind = merged[-1]
            merged[-1] = (first_start, max(first_end, end), first_kind)
        else:
            merged.append((start, end, kind))
    return merged
