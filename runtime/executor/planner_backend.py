"""`PlannerBackend`: the planner model does executor work while no executor model exists yet.

    backend = PlannerBackend(planner, tokenizer_dir=executor_directory)   # tokenizer optional
    completion = await backend.complete(messages, SamplingParams(temperature=0.2, max_tokens=512))

Its episodes are text only and serve as distillation data for the first executor.

Invariants:
- Ids are never the planner's own (a hosted planner shows none). With the executor's tokenizer
  configured, prompt and completion are re-tokenised with it (`retokenized=True`); without one
  the ids stay empty. Logprobs are always empty.
- Each call uses the planner's current model (`/model` switches it), its fallbacks, retries and
  timeouts, with the call's temperature and max_tokens; top_p and seed are not sent (`ChatModel`
  takes neither), and `Completion.sampling` records top_p 1 and no seed accordingly (and no
  constrained sampling: the planner's reply is free text).
- A failed planner call raises `ExecutorCallError` carrying the planner's one-line message and
  whether it was transient.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from runtime.executor.completion import Completion, SamplingParams
from runtime.executor.errors import ExecutorCallError
from runtime.executor.tokenization import TokenizerOnDemand
from runtime.models import ChatModel, ModelError


class PlannerBackend:
    """An `ExecutorBackend` over the planner's `ChatModel`; see the module docstring."""

    name = "planner"

    def __init__(self, planner: ChatModel, *, tokenizer_dir: str | Path | None = None) -> None:
        self.planner = planner
        self._tokenizer = TokenizerOnDemand(tokenizer_dir)

    @property
    def adapter_version(self) -> str | None:
        return None

    async def complete(self, messages: Sequence[dict[str, Any]], sampling: SamplingParams) -> Completion:
        sent = replace(sampling, top_p=1.0, seed=None, constrained=False)
        settings = replace(
            self.planner.settings,
            model=self.planner.model,
            temperature=sent.temperature,
            max_tokens=sent.max_tokens,
        )
        try:
            reply = await ChatModel(settings).complete(list(messages))
        except ModelError as error:
            raise ExecutorCallError(
                f"the planner, standing in as executor, failed: {error}", transient=error.transient
            ) from error
        finish_reason = "length" if reply.finish_reason == "length" else "stop"
        tokenizer = await self._tokenizer.get()
        prompt_ids: list[int] = []
        completion_ids: list[int] = []
        if tokenizer is not None:
            prompt_ids, completion_ids = tokenizer.retokenize(messages, reply.text, finish_reason)
        return Completion(
            text=reply.text,
            prompt_ids=prompt_ids,
            completion_ids=completion_ids,
            completion_logprobs=[],
            finish_reason=finish_reason,
            model=f"planner:{reply.model}",
            retokenized=tokenizer is not None,
            tokenizer_hash=tokenizer.hash if tokenizer else None,
            chat_template_hash=tokenizer.chat_template_hash if tokenizer else None,
            latency_s=reply.latency_s,
            sampling=sent,
        )
