"""A promoted executor version serving the next turn of a running daemon, without a restart: in
process (the local backend: a tiny model with real PEFT adapters) and over HTTP (`temper serve
executor`'s server on 127.0.0.1); `temper executor rollback` taking effect the same way. The
daemon runs in process with a loopback channel; the fake OpenAI server plays the planner."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from connectors.cli import app
from connectors.config import Config, load_config
from connectors.daemon.status import read_report
from learner.promote import promote
from learner.versions import ExecutorVersions, VersionMeta
from memory import MemoryStore
from runtime.executor import ExecutorServer, LocalModel, TaskKinds, build_tiny_model
from tests.connectors.test_daemon import FAST, daemon_for, let_in, running
from tests.fakes.daemon_setup import until
from tests.fakes.loopback_channel import LoopbackPlatform
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.tiny_model import build_tiny_adapter

pytestmark = pytest.mark.anyio

QUERY = "Copy the file list.txt to names.txt."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> None:
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    root = tmp_path_factory.mktemp("daemon-versions")
    model_dir = build_tiny_model(root / "tiny", seed=0)
    return model_dir, {n: build_tiny_adapter(model_dir, root / n, seed=s) for n, s in (("a", 1), ("b", 2))}


def config_with(tmp_path: Path, server: FakeOpenAI, executor: str) -> Config:
    models = "".join(
        f'[models.{slot}]\nmodel = "openai/{slot}"\napi_base = "{server.base_url}"\napi_key_env = ""\n'
        for slot in ("planner", "judge")
    )
    text = (
        f'data_dir = "{tmp_path / "data"}"\n[sandbox]\nbackend = "local"\n'
        f"[executor]\nmax_turns = 1\nexploration = 0\n{executor}{models}"
    )
    (tmp_path / "config.toml").write_text(text)
    return load_config(tmp_path / "config.toml", environ={})


def promote_next(config: Config, model_dir: Path, adapter: Path) -> str:
    versions = ExecutorVersions(config.data_dir)
    meta = VersionMeta(base_model=str(model_dir), base_model_hash="", parent=versions.current_name())
    version = promote(versions, adapter, meta).name
    with MemoryStore.open(config.memory.db_path) as store:  # the gate measured it on the query's kind
        store.routing.record_competence(version, {TaskKinds(store).kind_of(QUERY): (1.0, 8)})
    return version


def served_versions(config: Config) -> list[str | None]:
    """The version on each executor episode's calls, and on its routing decision, in order."""
    with MemoryStore.open(config.memory.db_path) as store:
        decisions = store.routing.decisions()
        assert all(d.route == "executor" for d in decisions), [d.reason for d in decisions]
        on_calls = [
            {c.adapter_version for c in store.trajectories.calls(d.episode_id)}  # type: ignore[arg-type]
            for d in decisions
        ]
    assert all(len(found) == 1 for found in on_calls)
    assert [next(iter(found)) for found in on_calls] == [d.version for d in decisions]
    return [d.version for d in decisions]


async def ask(platform: LoopbackPlatform, server: FakeOpenAI) -> None:
    """One turn: the planner hands QUERY to terminal_task, then answers."""
    server.enqueue(tool_calls=[{"name": "terminal_task", "arguments": {"query": QUERY}}], model="planner")
    server.enqueue(text="Copied.", model="planner")
    server.enqueue(text='{"score": 1, "reason": "done"}', model="judge")
    replies = len(platform.sent())
    platform.say("ana", "copy my list please")
    await until(lambda: len(platform.sent()) > replies, timeout_s=60)


async def switch_and_roll_back(
    config: Config, server: FakeOpenAI, model_dir: Path, adapters: dict[str, Path], tmp_path: Path
) -> None:
    platform = LoopbackPlatform(tmp_path / "platform.db")
    let_in(config, "ana")
    promote_next(config, model_dir, adapters["a"])
    daemon = daemon_for(config, platform, settings=FAST)
    async with running(daemon):
        assert daemon._assembled is not None and daemon._assembled.terminal is not None
        terminal = daemon._assembled.terminal
        await until(lambda: terminal.version == "v1")
        await ask(platform, server)
        assert promote_next(config, model_dir, adapters["b"]) == "v2"
        await until(lambda: terminal.version == "v2")  # no restart
        await ask(platform, server)
        result = CliRunner().invoke(app, ["--config", str(tmp_path / "config.toml"), "executor", "rollback"])
        assert result.exit_code == 0, result.output
        await until(lambda: terminal.version == "v1")
        await until(
            lambda: (read_report(config.data_dir / "daemon.json") or {}).get("executor_version") == "v1"
        )
        await ask(platform, server)
    assert served_versions(config) == ["v1", "v2", "v1"]


@pytest.mark.slow  # ~50 s: three turns of a tiny executor sampling up to 512 tokens
async def test_a_promoted_version_serves_the_next_turn_in_process_and_rollback_too(
    tmp_path: Path, server: FakeOpenAI, tiny: tuple[Path, dict[str, Path]]
) -> None:
    model_dir, adapters = tiny
    config = config_with(tmp_path, server, f'backend = "local"\nmodel_dir = "{model_dir}"\n')
    await switch_and_roll_back(config, server, model_dir, adapters, tmp_path)


@pytest.mark.slow  # ~50 s: three turns of a tiny executor sampling up to 512 tokens
async def test_a_promoted_version_serves_the_next_turn_over_http_and_rollback_too(
    tmp_path: Path, server: FakeOpenAI, tiny: tuple[Path, dict[str, Path]]
) -> None:
    model_dir, adapters = tiny
    versions_dir = tmp_path / "data" / "executor" / "versions"
    versions_dir.mkdir(parents=True)
    model = LocalModel.load(model_dir)
    async with ExecutorServer(model, port=0, served_name="tiny", adapter_root=versions_dir) as executor:
        config = config_with(
            tmp_path,
            server,
            f'backend = "openai"\nmodel_dir = "{model_dir}"\n'
            f'[models.executor]\nmodel = "openai/tiny"\napi_base = "{executor.base_url}"\napi_key_env = ""\n',
        )
        await switch_and_roll_back(config, server, model_dir, adapters, tmp_path)
    assert set(model.adapters) == {"v1"}  # the server unloaded v2 after the rollback
