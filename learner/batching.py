"""Sampling a GRPO group as one batch while each attempt runs its own executor loop.

The G attempts at a task run concurrently; their first model calls have identical messages
(the system prompt and the task). `GroupBatcher` wraps a backend that can sample a group
(`complete_group(messages, sampling, seeds)`): calls that arrive in the same tick with the
same messages and sampling settings are answered by one batched call, each with its own seed.
Later turns (different messages per attempt) go one by one. On one CPU thread this makes the
first turn of a group of 8 about as costly as ~2 single samples (bench/learner.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
import json
from typing import Any, Protocol

from runtime.executor import Completion, SamplingParams


class GroupSampler(Protocol):
    name: str

    async def complete(self, messages: Sequence[dict[str, Any]], sampling: SamplingParams) -> Completion: ...

    async def complete_group(
        self, messages: Sequence[dict[str, Any]], sampling: SamplingParams, seeds: Sequence[int]
    ) -> list[Completion]: ...


@dataclass
class _Pending:
    messages: Sequence[dict[str, Any]]
    sampling: SamplingParams
    futures: list[tuple[int, asyncio.Future[Completion]]]


class GroupBatcher:
    def __init__(self, backend: GroupSampler) -> None:
        self.backend = backend
        self.name = backend.name
        self._pending: dict[str, _Pending] = {}

    async def complete(self, messages: Sequence[dict[str, Any]], sampling: SamplingParams) -> Completion:
        key = json.dumps([messages, replace(sampling, seed=None).as_dict()], sort_keys=True)
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        seed = sampling.seed if sampling.seed is not None else 0
        pending = self._pending.get(key)
        if pending is None:
            pending = self._pending[key] = _Pending(messages, sampling, [])
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self._flush(key)))
        pending.futures.append((seed, future))
        return await future

    async def _flush(self, key: str) -> None:
        pending = self._pending.pop(key)
        seeds = [seed for seed, _ in pending.futures]
        try:
            if len(seeds) == 1:
                results = [await self.backend.complete(pending.messages, replace(pending.sampling, seed=seeds[0]))]
            else:
                results = await self.backend.complete_group(pending.messages, pending.sampling, seeds)
        except BaseException as error:
            for _, future in pending.futures:
                if not future.done():
                    future.set_exception(error)
            return
        for (_, future), result in zip(pending.futures, results, strict=True):
            if not future.done():
                future.set_result(result)
