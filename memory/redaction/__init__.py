"""How memory/secrets.py finds secrets in text: detectors that each give the spans they find.

    detectors()     # every detector, built once (detect-secrets loads on first use)

- plugins.py: detect-secrets' provider plugins and its KeywordDetector;
- shapes.py: temper's own key formats (`hf_`, `AIza`, `xai-`, `gsk_`, `sk_live_`, ...), private
  key blocks, credentials in URLs, random `prefix_` keys and AWS secret keys;
- context.py: values given to names that say they are secret (env files, JSON and YAML keys,
  flags, query parameters, headers, columns of a CSV) and passwords on common command lines;
- names.py and values.py: which names say so, and which values are secrets (references such as
  `$VAR` are not; randomness by detect-secrets' entropy).

A detector has `hints` (lower-case strings one of which its every match contains: text without
any is skipped) and `spans(text)`: (start, end, kind) of each secret. Spans may overlap; the
redactor merges them.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Protocol

from .names import is_secret_name

Span = tuple[int, int, str]


class Detector(Protocol):
    @property
    def hints(self) -> tuple[str, ...]: ...

    def spans(self, text: str) -> Iterator[Span]: ...


@cache
def detectors() -> tuple[Detector, ...]:
    from .context import COMMAND_LINES, Assignments, KubernetesSecrets, SecretColumns
    from .plugins import QuotedKeywords, provider_shapes
    from .shapes import CONTEXT_FREE, PREFIXED

    return (
        *provider_shapes(),
        QuotedKeywords(),
        *PREFIXED,
        *CONTEXT_FREE,
        Assignments(),
        SecretColumns(),
        KubernetesSecrets(),
        *COMMAND_LINES,
    )


__all__ = ["Detector", "Span", "detectors", "is_secret_name"]
