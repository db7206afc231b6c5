"""A GRPO group sampled as one batch equals its members sampled one by one with the same seeds."""

from __future__ import annotations

import asyncio

import pytest
import torch

from learner.batching import GroupBatcher
from runtime.executor import LocalBackend, LocalModel, SamplingParams, build_tiny_model

MESSAGES = [
    {"role": "system", "content": "You do terminal work."},
    {"role": "user", "content": "Create a.txt containing x."},
]


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> LocalBackend:
    torch.set_num_threads(1)
    return LocalBackend(LocalModel.load(build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)))


def test_a_group_equals_its_members_sampled_alone(backend: LocalBackend) -> None:
    async def both() -> tuple[list, list]:
        alone = [
            await backend.complete(MESSAGES, SamplingParams(temperature=1.0, max_tokens=32, seed=s))
            for s in range(6)
        ]
        group = await backend.complete_group(
            MESSAGES, SamplingParams(temperature=1.0, max_tokens=32), list(range(6))
        )
        return alone, group

    alone, group = asyncio.run(both())
    assert [c.completion_ids for c in group] == [c.completion_ids for c in alone]
    assert len({tuple(c.completion_ids) for c in group}) > 1  # different seeds, different draws
    for completion in group:
        recomputed = backend.model.logprobs_of(completion.prompt_ids, completion.completion_ids)
        assert max(abs(a - b) for a, b in zip(recomputed, completion.completion_logprobs)) < 1e-4


def test_the_batcher_turns_concurrent_identical_calls_into_one_group(backend: LocalBackend) -> None:
    batcher = GroupBatcher(backend)

    async def concurrent() -> list:
        first = [
            batcher.complete(MESSAGES, SamplingParams(temperature=1.0, max_tokens=32, seed=s))
            for s in range(4)
        ]
        other = batcher.complete(
            MESSAGES[:1] + [{"role": "user", "content": "something else"}],
            SamplingParams(seed=9, max_tokens=8),
        )
        return await asyncio.gather(*first, other)

    results = asyncio.run(concurrent())
    assert [c.sampling.seed for c in results[:4]] == [0, 1, 2, 3]
    alone = asyncio.run(backend.complete(MESSAGES, SamplingParams(temperature=1.0, max_tokens=32, seed=2)))
    assert results[2].completion_ids == alone.completion_ids
    assert results[4].prompt_ids != results[0].prompt_ids
