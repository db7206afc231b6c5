"""runtime.executor.switch: a running executor model changing version, with real PEFT adapters of
the tiny model; a run started on a version finishes on it, and only then is it unloaded."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from runtime.executor import LocalBackend, LocalModel, ModelSwitch, SamplingParams, build_tiny_model
from tests.fakes.tiny_model import build_tiny_adapter

pytestmark = pytest.mark.anyio

MESSAGES = [{"role": "user", "content": "Count the lines in data.csv."}]
GREEDY = SamplingParams(temperature=0.0, max_tokens=6)


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> None:
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("switch")
    model_dir = build_tiny_model(root / "tiny", seed=0)
    return (
        model_dir,
        build_tiny_adapter(model_dir, root / "a", seed=1),
        build_tiny_adapter(model_dir, root / "b", seed=2),
    )


async def test_an_in_flight_run_finishes_on_its_version_and_the_old_one_unloads_after(
    tiny: tuple[Path, Path, Path],
) -> None:
    model_dir, first, second = tiny
    backend = LocalBackend(LocalModel.load(model_dir))
    switch = ModelSwitch(backend)
    assert await switch.activate("v1", first) and switch.version == "v1"
    assert not await switch.activate("v1", first)  # already serving
    async with switch.pinned() as (run_model, version):
        before = await run_model.complete(MESSAGES, GREEDY)
        assert await switch.activate("v2", second)  # promoted while the run goes on
        assert switch.version == "v2" and switch.runs_on("v1") == 1
        assert set(backend.model.adapters) == {"v1", "v2"}  # v1 stays while its run needs it
        during = await run_model.complete(MESSAGES, GREEDY)
        assert version == during.adapter_version == "v1" and during.completion_ids == before.completion_ids
    assert set(backend.model.adapters) == {"v2"}  # unloaded once its last run ended
    async with switch.pinned() as (run_model, version):
        after = await run_model.complete(MESSAGES, GREEDY)
    assert version == after.adapter_version == "v2" and after.completion_ids != before.completion_ids

    assert await switch.activate("v1", first)  # a rollback: loaded again, v2 unloaded (no run on it)
    assert set(backend.model.adapters) == {"v1"}
    async with switch.pinned() as (run_model, _):
        assert (await run_model.complete(MESSAGES, GREEDY)).completion_ids == before.completion_ids
    assert await switch.activate(None) and set(backend.model.adapters) == set()  # the base model


async def test_a_rollback_before_the_old_version_unloaded_keeps_it(tiny: tuple[Path, Path, Path]) -> None:
    model_dir, first, second = tiny
    backend = LocalBackend(LocalModel.load(model_dir))
    switch = ModelSwitch(backend)
    await switch.activate("v1", first)
    async with switch.pinned():
        await switch.activate("v2", second)
        await switch.activate("v1")  # back before v1's run ended: no load needed, none unloaded
        assert switch.version == "v1"
    assert set(backend.model.adapters) == {"v1"} and switch.version == "v1"  # v2 had no runs: gone
