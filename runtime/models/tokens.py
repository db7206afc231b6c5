"""Counting the tokens of a prompt, offline, to measure fixed prompt overhead.

litellm's `token_counter` is used as it is: tiktoken with the encodings litellm bundles (o200k
for the gpt-4o family, cl100k for everything else, exact for OpenAI models and an estimate for
other families), plus the tokens it adds per message and for tool schemas. No file is downloaded
(litellm_setup.py turns off Hugging Face tokenizer fetches). The first count loads an encoding
(~0.4 s); later ones take well under a millisecond for a typical prompt. It is synchronous CPU
work: count big batches off the event loop.
"""

from __future__ import annotations

from typing import Any

from runtime.models.litellm_setup import import_litellm


def count_tokens(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    model: str = "openai/gpt-4o-mini",
) -> int:
    """Prompt tokens of `messages` plus `tools` (OpenAI chat format) as `model` would see them."""
    litellm = import_litellm()
    return int(litellm.token_counter(model=model, messages=messages, tools=tools or None))
