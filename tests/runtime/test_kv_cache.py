"""runtime/executor/kv_cache.py: a cache layer that grows in place gives attention exactly what
transformers' own DynamicLayer gives it, through the updates the sampler makes."""

from __future__ import annotations

import torch

from runtime.executor import kv_cache
from runtime.executor.kv_cache import CHUNK, growing_cache


def _states(generator: torch.Generator, batch: int, tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
    shape = (batch, 2, tokens, 8)  # (B, heads, T, head width)
    return torch.randn(shape, generator=generator), torch.randn(shape, generator=generator)


def test_a_growing_layer_returns_what_a_dynamic_layer_returns_at_every_update() -> None:
    generator = torch.Generator().manual_seed(0)
    growing, dynamic = kv_cache.GrowingLayer(), kv_cache.DynamicLayer()
    # The sampler's pattern: a shared prompt for one row, repeated for every row, the rest of
    # the prompt, then one token at a time past a chunk's room, and a crop.
    keys, values = _states(generator, 1, 10)
    for layer in (growing, dynamic):
        layer.update(keys, values)
        layer.batch_repeat_interleave(3)
    steps = [7] + [1] * (CHUNK + 5)
    for step, tokens in enumerate(steps):
        keys, values = _states(generator, 3, tokens)
        got, expected = growing.update(keys, values), dynamic.update(keys, values)
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1]), step
        assert growing.get_seq_length() == dynamic.get_seq_length()
        if step == 20:
            growing.crop(-4), dynamic.crop(-4)


def test_one_token_at_a_time_writes_into_the_same_store_until_it_fills() -> None:
    generator = torch.Generator().manual_seed(1)
    layer = kv_cache.GrowingLayer()
    layer.update(*_states(generator, 4, 30))
    first = layer.keys.data_ptr()
    for _ in range(CHUNK):  # the room made at the first update
        layer.update(*_states(generator, 4, 1))
        assert layer.keys.data_ptr() == first
    layer.update(*_states(generator, 4, 1))
    assert layer.keys.data_ptr() != first  # full: a new store, made once
    assert layer.get_seq_length() == 30 + CHUNK + 1


def test_growing_cache_replicates_growing_layers() -> None:
    cache = growing_cache()
    generator = torch.Generator().manual_seed(2)
    for index in range(3):
        cache.update(*_states(generator, 2, 5), index)
    assert [type(layer) for layer in cache.layers] == [kv_cache.GrowingLayer] * 3
    assert cache.get_seq_length() == 5
