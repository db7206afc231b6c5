"""learner.versions, learner.promote and runtime's ModelSwitch with real PEFT adapters of the tiny
model: versions on disk, the pointer and its history, rollback, and activation in process and
over HTTP against a real `temper serve executor` server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from learner.gate import GateSettings, HeldoutResult, decide
from learner.promote import promote, rollback
from learner.versions import ExecutorVersions, Version, VersionError, VersionMeta, model_hash
from runtime.executor import (
    ExecutorServer,
    LocalBackend,
    LocalModel,
    ModelSwitch,
    OpenAIBackend,
    SamplingParams,
    build_tiny_model,
)
from tests.fakes.tiny_model import build_tiny_adapter

pytestmark = pytest.mark.anyio  # the warning filters: pyproject.toml

MESSAGES = [
    {"role": "system", "content": "You run shell commands. Answer with one JSON action."},
    {"role": "user", "content": "Count the lines in data.csv."},
]
GREEDY = SamplingParams(temperature=0.0, max_tokens=8)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> None:
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)


@pytest.fixture(scope="module")
def candidates(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two trained-looking adapters, as a learning cycle leaves them in its work folder."""
    root = tmp_path_factory.mktemp("candidates")
    return {name: build_tiny_adapter(tiny_dir, root / name, seed=seed) for name, seed in (("a", 1), ("b", 2))}


@pytest.fixture
def versions(tmp_path: Path) -> ExecutorVersions:
    return ExecutorVersions(tmp_path / "data")


def meta(tiny_dir: Path, parent: str | None = None, **changes: object) -> VersionMeta:
    gate = decide(
        [HeldoutResult(f"t{i}", 0, 0.0) for i in range(12)],
        [HeldoutResult(f"t{i}", 0, 1.0) for i in range(12)],
        GateSettings(),
    )
    fields: dict = dict(
        base_model=str(tiny_dir), base_model_hash=model_hash(tiny_dir), parent=parent,
        training={"episodes": 96, "steps": 12, "mean_reward": 0.41}, gate=gate.as_dict(),
    )  # fmt: skip
    return VersionMeta(**{**fields, **changes})


async def greedy_ids(backend: LocalBackend | OpenAIBackend) -> list[int]:
    return (await backend.complete(MESSAGES, GREEDY)).completion_ids


# Versions, promotion, rollback ------------------------------------------------------------------


def test_promote_writes_a_peft_version_with_its_meta_and_moves_the_pointer(
    versions: ExecutorVersions, tiny_dir: Path, candidates: dict[str, Path]
) -> None:
    assert versions.current() is None and versions.list_versions() == []
    first = promote(versions, candidates["a"], meta(tiny_dir))
    assert first.name == "v1"
    assert sorted(p.name for p in first.directory.iterdir()) == [
        "adapter_config.json", "adapter_model.safetensors", "meta.json",
    ]  # fmt: skip
    assert (first.directory / "adapter_model.safetensors").read_bytes() == (
        candidates["a"] / "adapter_model.safetensors"
    ).read_bytes()
    stored = json.loads((first.directory / "meta.json").read_text())
    assert stored["base_model"] == str(tiny_dir) and stored["base_model_hash"].startswith("sha256:")
    assert stored["parent"] is None and stored["gate"]["promote"] is True and stored["created_at"] > 0
    assert stored["training"] == {"episodes": 96, "steps": 12, "mean_reward": 0.41}
    assert (versions.root / "current").read_text() == "v1\n"

    second = promote(versions, candidates["b"], meta(tiny_dir, parent="v1"))
    assert second.name == "v2" and versions.current() == second
    assert [v.name for v in versions.list_versions()] == ["v1", "v2"]
    assert [(m.action, m.from_version, m.to_version) for m in versions.history()] == [
        ("promote", None, "v1"), ("promote", "v1", "v2"),
    ]  # fmt: skip


def test_rollback_follows_parents_and_refuses_past_the_first(
    versions: ExecutorVersions, tiny_dir: Path, candidates: dict[str, Path]
) -> None:
    with pytest.raises(VersionError, match="no executor version has been promoted yet"):
        rollback(versions)
    promote(versions, candidates["a"], meta(tiny_dir))
    promote(versions, candidates["b"], meta(tiny_dir, parent="v1"))
    promote(versions, candidates["a"], meta(tiny_dir, parent="v2"))
    assert rollback(versions).name == "v2"
    assert rollback(versions).name == "v1"
    with pytest.raises(VersionError, match="v1 is the first executor version"):
        rollback(versions)
    assert versions.current_name() == "v1"
    fourth = promote(versions, candidates["b"], meta(tiny_dir, parent="v1"))  # names never reused
    assert fourth.name == "v4" and fourth.meta.parent == "v1"
    assert [m.action for m in versions.history()] == ["promote"] * 3 + ["rollback"] * 2 + ["promote"]


def test_promote_refuses_a_stale_gate_a_refused_gate_and_a_folder_without_an_adapter(
    versions: ExecutorVersions, tiny_dir: Path, candidates: dict[str, Path], tmp_path: Path
) -> None:
    promote(versions, candidates["a"], meta(tiny_dir))
    with pytest.raises(VersionError, match="gated against the base model, but the current version is now v1"):
        promote(versions, candidates["b"], meta(tiny_dir, parent=None))
    refused = meta(tiny_dir, parent="v1", gate={"promote": False})
    with pytest.raises(VersionError, match="the gate refused this candidate"):
        promote(versions, candidates["b"], refused)
    (tmp_path / "empty").mkdir()
    with pytest.raises(VersionError, match="missing adapter_config.json, adapter_model.safetensors"):
        promote(versions, tmp_path / "empty", meta(tiny_dir, parent="v1"))
    assert [v.name for v in versions.list_versions()] == ["v1"] and versions.current_name() == "v1"
    assert not [p for p in versions.versions_dir.iterdir() if p.name.startswith(".")]  # no leftovers


def test_an_unknown_version_is_named_with_the_known_ones(
    versions: ExecutorVersions, tiny_dir: Path, candidates: dict[str, Path]
) -> None:
    promote(versions, candidates["a"], meta(tiny_dir))
    with pytest.raises(VersionError, match=r"no executor version 'v9' \(versions: v1\)"):
        versions.get("v9")


# Activation: runtime's ModelSwitch, the one way a version reaches a running backend ---------------


async def follow(versions: ExecutorVersions, switch: ModelSwitch) -> Version | None:
    """What the daemon does when the version pointer moves: serve whatever is current."""
    current = versions.current()
    await switch.activate(
        None if current is None else current.name, None if current is None else current.directory
    )
    return current


async def test_activation_in_process_loads_switches_and_unloads(
    versions: ExecutorVersions, tiny_dir: Path, candidates: dict[str, Path]
) -> None:
    backend = LocalBackend(LocalModel.load(tiny_dir))
    switch = ModelSwitch(backend)
    base = await greedy_ids(backend)
    first = promote(versions, candidates["a"], meta(tiny_dir))
    assert await follow(versions, switch) == first
    assert backend.adapter_version == "v1" and set(backend.model.adapters) == {"v1"}
    with_first = await greedy_ids(backend)
    assert with_first != base

    second = promote(versions, candidates["b"], meta(tiny_dir, parent="v1"))
    await switch.activate(second.name, second.directory)
    assert backend.adapter_version == "v2" and set(backend.model.adapters) == {"v2"}  # v1 unloaded
    completion = await backend.complete(MESSAGES, GREEDY)
    assert completion.adapter_version == "v2" and completion.completion_ids not in (base, with_first)

    rollback(versions)
    await follow(versions, switch)
    assert backend.adapter_version == "v1" and set(backend.model.adapters) == {"v1"}
    assert await greedy_ids(backend) == with_first  # the same weights as before, loaded again
    await follow(versions, switch)  # already active: nothing changes
    assert set(backend.model.adapters) == {"v1"}


async def test_activation_over_http_against_temper_serve_executor(
    versions: ExecutorVersions, tiny_dir: Path, candidates: dict[str, Path]
) -> None:
    model = LocalModel.load(tiny_dir)
    first = promote(versions, candidates["a"], meta(tiny_dir))
    second = promote(versions, candidates["b"], meta(tiny_dir, parent="v1"))
    async with ExecutorServer(
        model, port=0, served_name="tiny", adapter_root=versions.versions_dir
    ) as server:
        async with OpenAIBackend(server.base_url, "tiny", tokenizer_dir=tiny_dir) as remote:
            switch = ModelSwitch(remote)
            base = await greedy_ids(remote)
            await switch.activate(first.name, first.directory)
            assert await remote.served_models() == ["tiny", "v1"]
            with_first = await greedy_ids(remote)
            await switch.activate(second.name, second.directory)
            assert await remote.served_models() == ["tiny", "v2"]
            completion = await remote.complete(MESSAGES, GREEDY)
            assert completion.adapter_version == "v2"
            rollback(versions)
            await follow(versions, switch)
            assert await remote.served_models() == ["tiny", "v1"]
            again = await greedy_ids(remote)
    assert with_first != base and completion.completion_ids not in (base, with_first)
    assert again == with_first
    # the server sampled with exactly the adapter the version folder holds
    assert model.adapters == {"v1": str(first.directory)}
