"""learner/batching.py: concurrent attempts share batches across prompts; rows keep their seeds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest
import torch

from learner.batching import GroupBatcher
from runtime.executor import (
    Completion,
    LocalBackend,
    LocalModel,
    SamplingParams,
    build_tiny_model,
)

TASK_A = [{"role": "user", "content": "Create a.txt containing x."}]
TASK_B = [{"role": "user", "content": "Count the lines of notes.md."}]
SAMPLING = SamplingParams(temperature=1.0, max_tokens=12)


class Recording:
    """A LocalBackend that remembers the batches it was asked for (how many rows each)."""

    def __init__(self, backend: LocalBackend) -> None:
        self.backend = backend
        self.name = backend.name
        self.batches: list[int] = []

    async def complete_batch(
        self,
        conversations: Sequence[Sequence[dict[str, Any]]],
        sampling: SamplingParams,
        seeds: Sequence[int],
    ) -> list[Completion]:
        self.batches.append(len(conversations))
        return await self.backend.complete_batch(conversations, sampling, seeds)


class Broken:
    name = "broken"

    async def complete_batch(self, *_: Any) -> list[Completion]:
        raise RuntimeError("the model fell over")


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> LocalBackend:
    torch.set_num_threads(1)
    return LocalBackend(LocalModel.load(build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)))


def seeded(seed: int) -> SamplingParams:
    return SamplingParams(SAMPLING.temperature, SAMPLING.top_p, SAMPLING.max_tokens, seed)


async def attempt(
    batcher: GroupBatcher, messages: list[dict[str, str]], seed: int, delay: float = 0.0
) -> Completion:
    async with batcher.attempt():
        await asyncio.sleep(delay)  # busy in a sandbox before its model call
        return await batcher.complete(messages, seeded(seed))


def test_attempts_at_different_tasks_share_one_batch_and_keep_their_draws(backend: LocalBackend) -> None:
    recording = Recording(backend)
    batcher = GroupBatcher(recording, window_s=30.0)  # only "everyone is waiting" can send it

    async def run() -> list[Completion]:
        calls = [
            attempt(batcher, TASK_A, 1),
            attempt(batcher, TASK_B, 2, delay=0.05),
            attempt(batcher, TASK_A, 3, delay=0.1),
        ]
        return await asyncio.gather(*calls)

    began = time.perf_counter()
    results = asyncio.run(run())
    assert time.perf_counter() - began < 10  # not the window: it went when the last one waited
    assert recording.batches == [3]
    for result, messages, seed in zip(results, [TASK_A, TASK_B, TASK_A], [1, 2, 3], strict=True):
        alone = asyncio.run(backend.complete(messages, seeded(seed)))
        assert result.completion_ids == alone.completion_ids and result.prompt_ids == alone.prompt_ids
        assert result.sampling.seed == seed


def test_a_busy_attempt_holds_the_others_up_only_for_the_window(backend: LocalBackend) -> None:
    recording = Recording(backend)
    batcher = GroupBatcher(recording, window_s=0.05)

    async def run() -> tuple[float, list[Completion]]:
        began = time.perf_counter()
        quick = asyncio.gather(attempt(batcher, TASK_A, 1), attempt(batcher, TASK_B, 2))
        slow = asyncio.ensure_future(attempt(batcher, TASK_A, 3, delay=3.0))
        first = await quick
        waited = time.perf_counter() - began
        return waited, [*first, await slow]

    waited, results = asyncio.run(run())
    assert waited < 2.5 and recording.batches == [2, 1]
    assert [r.sampling.seed for r in results] == [1, 2, 3]


def test_an_attempt_that_ends_lets_the_waiting_ones_go(backend: LocalBackend) -> None:
    recording = Recording(backend)
    batcher = GroupBatcher(recording, window_s=30.0)

    async def finishes_without_a_call() -> None:
        async with batcher.attempt():
            await asyncio.sleep(0.05)

    async def run() -> None:
        await asyncio.gather(attempt(batcher, TASK_A, 1), finishes_without_a_call())

    began = time.perf_counter()
    asyncio.run(run())
    assert time.perf_counter() - began < 10 and recording.batches == [1]


def test_reserved_attempts_hold_a_batch_while_they_prepare_and_released_ones_do_not(
    backend: LocalBackend,
) -> None:
    recording = Recording(backend)
    batcher = GroupBatcher(recording, window_s=30.0)  # only "everyone is waiting" can send it

    async def prepared_later(messages: list[dict[str, str]], seed: int, delay: float) -> Completion:
        await asyncio.sleep(delay)  # its task's snapshot, before the attempt enters
        async with batcher.attempt(reserved=True):
            return await batcher.complete(messages, seeded(seed))

    async def run() -> None:
        batcher.reserve(3)  # three attempts, one of which never starts (its preparation failed)
        first = asyncio.ensure_future(prepared_later(TASK_A, 1, 0.0))
        second = asyncio.ensure_future(prepared_later(TASK_B, 2, 0.1))
        await asyncio.sleep(0.3)
        batcher.release(1)
        await asyncio.gather(first, second)

    began = time.perf_counter()
    asyncio.run(run())
    # The first did not go alone while the second prepared; the release let both go at once.
    assert time.perf_counter() - began < 10 and recording.batches == [2]


def test_unregistered_calls_of_one_tick_go_together_split_by_sampling_settings(backend: LocalBackend) -> None:
    recording = Recording(backend)
    batcher = GroupBatcher(recording)

    async def run() -> list[Completion]:
        return await asyncio.gather(
            batcher.complete(TASK_A, seeded(1)), batcher.complete(TASK_B, seeded(2)),
            batcher.complete(TASK_A, SamplingParams(temperature=0.0, max_tokens=4)),
        )  # fmt: skip

    results = asyncio.run(run())
    assert sorted(recording.batches) == [1, 2]
    assert results[2].sampling.seed is not None  # drawn, and recorded
    assert len(results[2].completion_ids) <= 4


def test_a_failed_batch_fails_every_call_in_it() -> None:
    batcher = GroupBatcher(Broken())

    async def run() -> list[Any]:
        calls = (batcher.complete(TASK_A, seeded(s)) for s in range(3))
        return await asyncio.gather(*calls, return_exceptions=True)

    results = asyncio.run(run())
    assert [str(r) for r in results] == ["the model fell over"] * 3
