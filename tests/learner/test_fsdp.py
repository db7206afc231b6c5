"""learner/fsdp.py through learner/train_recorded.py --fsdp: a real two-process launch
(`accelerate launch --multi_gpu --num_processes 2 ... --cpu --fsdp`: gloo) holds each decoder
layer's base weights half on each rank, and trains the same adapter, from the same gradients, as
one process on the same recorded rows, within float tolerance."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from memory import MemoryStore
from runtime.executor import LocalModel, build_tiny_model
from tests.learner.test_data_parallel import assert_trained_alike, launch_two, record_groups, train


@pytest.mark.slow  # ~45 s: three Python processes importing torch, peft and accelerate
def test_two_fsdp_processes_shard_the_base_and_train_the_adapter_one_process_trains(
    tmp_path: Path,
) -> None:
    torch.set_num_threads(1)
    model_dir = build_tiny_model(tmp_path / "tiny", seed=0)
    with MemoryStore.open(tmp_path / "memory.db") as store:
        record_groups(store, LocalModel.load(model_dir))

    one = train([sys.executable], model_dir, tmp_path / "memory.db", tmp_path / "one", "--fsdp")
    two = train(launch_two(), model_dir, tmp_path / "memory.db", tmp_path / "two", "--fsdp")

    packs = int(re.search(r"in (\d+) micro-batches over 2 ranks", two).group(1))  # type: ignore[union-attr]
    assert packs >= 3 and packs % 2 == 1  # uneven: one rank runs an idle micro-batch
    # One process holds the whole base; each of two ranks the whole embeddings (tied to the head)
    # and the final norm, and half of every decoder layer.
    [(alone, whole)] = [tuple(map(int, m)) for m in re.findall(r"rank 0 holds (\d+) of (\d+)", one)]
    assert alone == whole
    held = dict((int(r), int(n)) for r, n, w in re.findall(r"rank (\d) holds (\d+) of (\d+)", two))
    assert held.keys() == {0, 1}
    base = AutoModelForCausalLM.from_pretrained(model_dir)
    layers = sum(p.numel() for p in base.get_decoder().layers.parameters())
    assert layers > whole / 2
    for rank in (0, 1):
        assert held[rank] - (whole - layers) == pytest.approx(layers / 2, rel=0.02)

    assert_trained_alike(tmp_path, one, two)
