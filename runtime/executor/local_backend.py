"""`LocalBackend`: the executor backend over an in-process Hugging Face model (`LocalModel`).

    backend = await LocalBackend.load(directory)                 # CPU, one torch thread
    completion = await backend.complete(messages, SamplingParams(max_tokens=64, seed=1))
    await backend.logprobs_of(completion.prompt_ids, completion.completion_ids)  # == its logprobs
    await backend.complete_batch([messages_a, messages_b], sampling, seeds=[1, 2])  # one batch

Invariants:
- ids and logprobs are exact by construction: `prompt_ids` is the chat template's encoding (the
  very ids the model is conditioned on), `completion_ids` what it sampled, stop token included,
  and `completion_logprobs` their raw model log-probabilities (sampling.py's convention).
- `text` is `completion_ids` decoded without special tokens (the eos is left out).
- Model work runs in a worker thread, never on the event loop, one operation at a time per model
  (`LocalModel`'s lock).
- The adapter is chosen when a call starts and recorded in its `Completion`; swapping adapters
  while a call runs does not relabel it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from runtime.executor.completion import Completion, SamplingParams
from runtime.executor.errors import ExecutorRequestError
from runtime.executor.local_model import LocalModel
from runtime.executor.sampling import SampledTokens


class LocalBackend:
    """An `ExecutorBackend` and `AdapterHost` over a `LocalModel`."""

    name = "local"

    def __init__(self, model: LocalModel, *, adapter: str | None = None) -> None:
        self.model = model
        self._adapter = adapter

    @classmethod
    async def load(
        cls,
        directory: str | Path,
        *,
        device: str = "cpu",
        dtype: str | None = None,
        threads: int | None = 1,
    ) -> LocalBackend:
        """Load a model directory in a worker thread; see `LocalModel.load`."""
        model = await asyncio.to_thread(
            LocalModel.load, directory, device=device, dtype=dtype, threads=threads
        )
        return cls(model)

    @property
    def adapter_version(self) -> str | None:
        return self._adapter

    async def complete(self, messages: Sequence[dict[str, Any]], sampling: SamplingParams) -> Completion:
        adapter = self._adapter
        started = time.perf_counter()
        tokenizer = self.model.tokenizer

        def run() -> tuple[list[int], SampledTokens]:
            prompt_ids = tokenizer.encode_chat(messages)
            return prompt_ids, self.model.sample(prompt_ids, sampling, adapter=adapter)

        prompt_ids, sampled = await asyncio.to_thread(run)
        return self._completion(prompt_ids, sampled, adapter, time.perf_counter() - started, sampling)

    async def complete_group(
        self, messages: Sequence[dict[str, Any]], sampling: SamplingParams, seeds: Sequence[int]
    ) -> list[Completion]:
        """One Completion per seed for the same messages, sampled as one batch (a GRPO group)."""
        return await self.complete_batch([messages] * len(seeds), sampling, seeds)

    async def complete_batch(
        self,
        conversations: Sequence[Sequence[dict[str, Any]]],
        sampling: SamplingParams,
        seeds: Sequence[int],
    ) -> list[Completion]:
        """One Completion per (messages, seed) pair, all sampled as one batch: the groups of
        several tasks at once, or different turns of different attempts. Each equals what
        `complete` gives for its messages with `sampling.seed` = its seed (batched arithmetic
        aside); `sampling.seed` itself is ignored."""
        adapter = self._adapter
        started = time.perf_counter()
        tokenizer = self.model.tokenizer

        def run() -> tuple[list[list[int]], list[SampledTokens]]:
            prompts = [tokenizer.encode_chat(messages) for messages in conversations]
            return prompts, self.model.sample_batch(prompts, sampling, seeds, adapter=adapter)

        prompts, batch = await asyncio.to_thread(run)
        latency = time.perf_counter() - started
        return [
            self._completion(prompt_ids, sampled, adapter, latency, replace(sampling, seed=seed))
            for prompt_ids, sampled, seed in zip(prompts, batch, seeds, strict=True)
        ]

    def _completion(
        self,
        prompt_ids: list[int],
        sampled: SampledTokens,
        adapter: str | None,
        latency_s: float,
        sampling: SamplingParams,
    ) -> Completion:
        tokenizer = self.model.tokenizer
        return Completion(
            text=tokenizer.decode(sampled.ids),
            prompt_ids=prompt_ids,
            completion_ids=sampled.ids,
            completion_logprobs=sampled.logprobs,
            finish_reason=sampled.finish_reason,
            model=self.model.name,
            adapter_version=adapter,
            tokenizer_hash=tokenizer.hash,
            chat_template_hash=tokenizer.chat_template_hash,
            latency_s=latency_s,
            sampling=sampling,
        )

    async def logprobs_of(self, prompt_ids: Sequence[int], completion_ids: Sequence[int]) -> list[float]:
        """Teacher-forced raw log-probabilities of `completion_ids` under the active adapter (for
        another, `self.model.logprobs_of(..., adapter=version)` in a thread)."""
        adapter = self._adapter
        return await asyncio.to_thread(self.model.logprobs_of, prompt_ids, completion_ids, adapter=adapter)

    def pinned(self, version: str | None) -> LocalBackend:
        """A view on the same model that always samples with `version` (loaded, or None for the
        base model), whatever this backend switches to later: one executor run's backend."""
        return LocalBackend(self.model, adapter=version)

    async def load_adapter(self, version: str, directory: str | Path) -> None:
        """Load a PEFT adapter and sample with it from the next call on."""
        await asyncio.to_thread(self.model.load_adapter, version, directory)
        self._adapter = version

    async def use_adapter(self, version: str | None) -> None:
        if version is not None and version not in self.model.adapters:
            raise ExecutorRequestError(f"no adapter {version!r} is loaded: load it first", status=404)
        self._adapter = version

    async def unload_adapter(self, version: str) -> None:
        await asyncio.to_thread(self.model.unload_adapter, version)
        if self._adapter == version:
            self._adapter = None
