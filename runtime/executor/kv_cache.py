"""A key-value cache that grows in place, for the sampler's token-by-token decoding.

transformers' DynamicCache appends each new token's keys and values with `torch.cat`, which
copies the whole cache at every token of every layer: for a batch of 128 replies to prompts of a
few hundred tokens that copy was a third of sampling (0.36 s of a 1.05 s batch). `GrowingLayer`
keeps each layer's keys and values in a store with room for CHUNK more positions and writes the
new ones into it; what attention reads is a view of the store's filled part, so it sees the same
values in the same order, and the samples are the same (tests/runtime/test_kv_cache.py). The store
is copied only when it fills, once per CHUNK tokens.

Anything that replaces a layer's tensors from outside (DynamicLayer's batch repeat for the shared
prompt, cropping, selecting rows) is noticed at the next update: the store is rebuilt from them.
It needs transformers' layered caches (4.57 or later, the `learn` extra's floor).
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer

CHUNK = 64  # positions of room made at a time


class GrowingLayer(DynamicLayer):
    """A DynamicLayer whose keys and values are views of stores with room to grow."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._stores: tuple[torch.Tensor, torch.Tensor] | None = None

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            try:
                self.lazy_initialization(key_states, value_states)
            except TypeError:  # transformers before 5.0: keys only
                self.lazy_initialization(key_states)  # type: ignore[call-arg]
        length = self.get_seq_length()
        grown = length + key_states.shape[-2]
        if self._stores is None or not self._has_room(length, grown, key_states):
            self._stores = self._rebuilt(length, grown, key_states, value_states)
        keys, values = self._stores
        keys[:, :, length:grown] = key_states
        values[:, :, length:grown] = value_states
        self.keys, self.values = keys[:, :, :grown], values[:, :, :grown]
        return self.keys, self.values

    def _has_room(self, length: int, grown: int, key_states: torch.Tensor) -> bool:
        """Whether the stores hold this layer's current tensors and room for `grown` positions."""
        if self._stores is None or length == 0 or self.keys is None:
            return False
        keys = self._stores[0]
        return (
            keys.shape[2] >= grown
            and self.keys.data_ptr() == keys.data_ptr()
            and self.keys.shape[:2] == keys.shape[:2] == key_states.shape[:2]
            and keys.dtype == key_states.dtype
        )

    def _rebuilt(
        self, length: int, grown: int, key_states: torch.Tensor, value_states: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """New stores with room for CHUNK positions past `grown`, holding the current tensors."""
        stores = []
        for current, new in ((self.keys, key_states), (self.values, value_states)):
            batch, heads, _, width = new.shape
            store = new.new_empty(batch, heads, grown + CHUNK, width)
            if length and current is not None:
                store[:, :, :length] = current
            stores.append(store)
        return stores[0], stores[1]


class GrowingCache(DynamicCache):
    """A DynamicCache whose layers are GrowingLayers."""

    def __init__(self) -> None:
        super().__init__()
        self.layer_class_to_replicate = GrowingLayer


def growing_cache() -> GrowingCache:
    """A new empty GrowingCache."""
    return GrowingCache()
