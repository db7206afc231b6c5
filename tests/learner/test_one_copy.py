"""One copy of the base weights in the process while it learns (learner/policy.py): the policy
being trained and the version in service are two adapters on one model, the reference policy is
that model with its adapters disabled, and a night's distillation lets its copy go before the
cycle loads one. Counted from outside at the hooks the cycle and the night already offer: every
parameter tensor alive in the process (the garbage collector's view), by storage; and every
forward pass through an embedding, by the storage of its weights. The configured dtype reaches
every module the night computes with."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM

from learner import ExecutorVersions
from learner.cycle import CycleSettings, Probe, load_model, run_cycle
from learner.memory_estimate import lora_parameters, weight_shapes
from learner.night import NightSettings, run_night
from learner.policy import LoraSettings, TrainablePolicy
from learner.replay import ReplaySettings, as_served
from learner.tasks import HarvestSettings, synthetic_suite
from learner.train import TrainSettings
from memory import MemoryStore
from runtime import BackendName
from runtime.executor import SamplingParams, build_tiny_model
from runtime.executor.loop import ExecutorSettings
from tests.learner.recorded import record_episode

LORA = LoraSettings(rank=4)
ONE_TURN = ExecutorSettings(max_turns=1, sampling=SamplingParams(temperature=1.0, max_tokens=16))


def parameter_storages() -> dict[int, tuple[int, torch.dtype]]:
    """Every parameter tensor alive in the process: storage address -> (elements, dtype)."""
    gc.collect()
    found: dict[int, tuple[int, torch.dtype]] = {}
    for obj in gc.get_objects():
        if issubclass(type(obj), torch.nn.Parameter) and not obj.is_meta:  # type() asks nothing of obj
            storage = obj.untyped_storage()
            found[storage.data_ptr()] = (storage.nbytes() // obj.element_size(), obj.dtype)
    return found


@dataclass
class Census:
    """Parameters that appeared since `before`, counted at each checkpoint by name."""

    before: set[int]
    counts: dict[str, int] = field(default_factory=dict)
    dtypes: dict[str, set[torch.dtype]] = field(default_factory=dict)
    embeddings: set[tuple[int, torch.dtype]] = field(default_factory=set)  # (storage, dtype) computed with

    def take(self, name: str) -> None:
        new = {ptr: found for ptr, found in parameter_storages().items() if ptr not in self.before}
        self.counts[name] = sum(elements for elements, _ in new.values())
        self.dtypes[name] = {dtype for _, dtype in new.values()}

    @contextmanager
    def watching_forwards(self) -> Iterator[None]:
        def hook(module: torch.nn.Module, _inputs: Any, _output: Any) -> None:
            if isinstance(module, torch.nn.Embedding):
                self.embeddings.add((module.weight.untyped_storage().data_ptr(), module.weight.dtype))

        handle = torch.nn.modules.module.register_module_forward_hook(hook)
        try:
            yield
        finally:
            handle.remove()


def replays(backend: BackendName) -> ReplaySettings:
    return ReplaySettings(group_size=2, sandbox=backend, command_timeout_s=5, executor=ONE_TURN)


def test_a_cycle_holds_one_copy_of_the_base_and_its_two_adapters(
    tmp_path: Path, isolating_backend: BackendName
) -> None:
    torch.set_num_threads(1)
    model_dir = build_tiny_model(tmp_path / "tiny", seed=0, layers=2)
    shapes = weight_shapes(model_dir)
    base = sum(torch.Size(shape).numel() for shape in shapes.values())
    adapter = lora_parameters(shapes, LORA)
    # The version in service: an adapter saved by a policy on a model loaded here and let go.
    in_service = TrainablePolicy.create(AutoModelForCausalLM.from_pretrained(model_dir), LORA)
    start_adapter = in_service.save_adapter(tmp_path / "v1")
    del in_service
    suite = synthetic_suite(seed=0, per_family=1)
    train = [t for t in suite if t.split == "train"][:4]
    heldout = [t for t in suite if t.split == "heldout"][:2]
    settings = CycleSettings(
        iterations=2, tasks_per_iteration=2, replay=replays(isolating_backend),
        evaluation=as_served(replace(replays(isolating_backend), seed=10_000)),
        train=TrainSettings(learning_rate=1e-3, lora=LORA, beta=0.1),  # the KL term: the reference runs too
    )  # fmt: skip
    store = MemoryStore.open(tmp_path / "memory.db")
    census = Census(set(parameter_storages()))

    with census.watching_forwards():
        result = asyncio.run(
            run_cycle(
                model_dir, train, heldout, store, tmp_path / "cycle", ExecutorVersions(tmp_path / "data"),
                settings, on_iteration=lambda i, _reward, _metrics: census.take(f"step {i}"),
                start_adapter=start_adapter, on_phase=census.take,
                probe=Probe(heldout, 1, lambda point: census.take(f"probe {point.steps}")),
            )
        )  # fmt: skip

    assert len(result.steps) == 2 and result.steps[-1].kl_ref is not None
    assert list(census.counts) == ["train", "step 0", "probe 1", "step 1", "gate"]
    # The base once, the version in service's adapter and the one being trained: nothing else.
    assert census.counts == dict.fromkeys(census.counts, base + 2 * adapter), (base, adapter)
    # Replays, training steps, the reference, the probe and the gate all computed with one copy.
    assert len(census.embeddings) == 1


def test_a_night_loads_one_copy_at_a_time_in_the_configured_dtype(
    tmp_path: Path, isolating_backend: BackendName
) -> None:
    torch.set_num_threads(1)
    store = MemoryStore.open(tmp_path / "memory.db")
    commands = [["sort notes.txt > sorted.txt"], ["cp notes.txt copy.txt"], ["wc -l < notes.txt > n.txt"]]
    for command in commands:  # the planner's successful episodes: the night distills them
        asyncio.run(record_episode(store, tmp_path, command, query=f"please run {command[0]}"))
    model_dir = build_tiny_model(tmp_path / "tiny", seed=0, layers=2)
    base = sum(torch.Size(shape).numel() for shape in weight_shapes(model_dir).values())
    regression = [t for t in synthetic_suite(seed=0, per_family=1) if t.split == "heldout"][:2]
    replay = replays(isolating_backend)
    settings = NightSettings(
        cycle=CycleSettings(
            iterations=1, tasks_per_iteration=2, replay=replay,
            evaluation=as_served(replace(replay, seed=10_000)), train=TrainSettings(lora=LORA),
            dtype="bfloat16",
        ),
        harvest=HarvestSettings(heldout_fraction=0.34),
        distill=replace(NightSettings().distill, lora=LORA, max_epochs=1),
        min_distill_examples=2,
    )  # fmt: skip
    census = Census(set(parameter_storages()))
    said: list[str] = []

    def say(line: str) -> None:
        said.append(line)
        census.take(line)

    with census.watching_forwards():
        night = asyncio.run(
            run_night(
                model_dir, store, tmp_path / "cycle", ExecutorVersions(tmp_path / "data"), settings,
                since=0, snapshot_dir=tmp_path / "snapshots", regression=regression,
                say=say, on_phase=census.take,
            )
        )  # fmt: skip

    assert any(line.startswith("distillation: an adapter imitated") for line in said), said
    assert night.distilled or "not kept" in night.distillation
    # At every hook, at most one copy of the base (in bfloat16) and its adapters (float32, as peft
    # keeps them): the distillation's copy was let go before the cycle loaded its own.
    assert set(census.counts) >= {"collect", "distill", "train", "gate", "measure"}
    for name, count in census.counts.items():
        assert count < 2 * base, (name, count, base)
        assert census.dtypes[name] <= {torch.bfloat16, torch.float32}, name
    assert torch.bfloat16 in census.dtypes["train"] and census.counts["train"] > base
    # Every forward pass of the night (distillation, its checks, replays, training, the gate)
    # computed with bfloat16 weights, one load for the distillation and one for the cycle.
    assert {dtype for _, dtype in census.embeddings} == {torch.bfloat16}
    assert len(census.embeddings) <= 2


def test_the_cycles_load_uses_the_configured_threads_dtype_and_attention(tmp_path: Path) -> None:
    model_dir = build_tiny_model(tmp_path / "tiny", layers=1)
    settings = CycleSettings(torch_threads=2, dtype="bfloat16", attn_implementation="eager")
    try:
        model = load_model(model_dir, settings)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(1)
    assert model.dtype == torch.bfloat16 and model.attn_implementation == "eager"
    load_model(model_dir, replace(settings, torch_threads=None))  # None: torch's own setting stays
    assert torch.get_num_threads() == 1
