"""What an executor model call returns, exactly as the model saw and produced it.

Every executor backend (openai-compatible server, in-process Hugging Face model, the planner
standing in) returns a `Completion`. The learner trains on these very tokens, so:

- `prompt_ids` are the ids the model was conditioned on, `completion_ids` the ids it sampled,
  `completion_logprobs[i]` the log-probability of `completion_ids[i]` under the model's raw
  distribution, before temperature and top-p (vLLM's default; the sampling policy itself at
  temperature 1 and top-p 1; sampling.py says why);
- ids come from the server or model that sampled them, never from re-encoding the text, unless
  the server returned none: then the text is re-tokenised with the executor's tokenizer and
  `retokenized` is True (such calls are distillation data, not policy-gradient data);
- `logprobs` is empty when the backend cannot give them (the planner backend).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 512
    seed: int | None = None
    # Keep each completion to the action format (runtime/executor/action_grammar.py): honoured by
    # the in-process model; a backend that cannot honour it records False.
    constrained: bool = False

    def as_dict(self) -> dict[str, Any]:
        plain = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }
        return {**plain, "constrained": True} if self.constrained else plain


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_ids: list[int]
    completion_ids: list[int]
    completion_logprobs: list[float]
    finish_reason: str  # "stop" or "length"
    model: str  # what answered: a model string, a model directory, or "planner:<model>"
    adapter_version: str | None = None  # the LoRA adapter version that sampled, if any
    retokenized: bool = False
    tokenizer_hash: str | None = None  # identifies the tokenizer (vocabulary + merges)
    chat_template_hash: str | None = None  # identifies how messages became prompt_ids
    latency_s: float = 0.0
    sampling: SamplingParams = field(default_factory=SamplingParams)


class ExecutorBackend(Protocol):
    """One call: chat messages in (OpenAI format), one Completion out."""

    name: str

    async def complete(self, messages: Sequence[dict[str, Any]], sampling: SamplingParams) -> Completion: ...
