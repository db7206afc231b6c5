"""connectors.assembly: the agent a config describes, executor included."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from connectors.assembly import build_agent
from connectors.config import ConfigError, load_config
from memory import StoredCall
from runtime import Inbound
from runtime.events import ToolReturned
from runtime.executor import LocalBackend, OpenAIBackend, SamplingParams, build_tiny_model
from tests.fakes.openai_server import FakeOpenAI


def config_at(tmp_path: Path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(f'data_dir = "{tmp_path / "data"}"\n[sandbox]\nbackend = "local"\n{text}')
    # An environment of our own: no secrets file beside the config, no TEMPER_* from outside.
    return load_config(path, {"OPENAI_API_KEY": "sk-test-0123456789", "XDG_CONFIG_HOME": str(tmp_path)})


def test_the_planner_stands_in_for_the_executor_by_default(tmp_path: Path) -> None:
    assembled = build_agent(config_at(tmp_path, ""), {"OPENAI_API_KEY": "sk-test-0123456789"})
    assert assembled.agent.toolbox.names[-1] == "terminal_task"
    route = assembled.agent.terminal.route("list the files")
    assert route.backend.name == "planner" and route.reason == "no executor model configured"
    assembled.store.close()


def test_without_the_executor_the_planner_gets_a_shell(tmp_path: Path) -> None:
    assembled = build_agent(
        config_at(tmp_path, "[executor]\nenabled = false\n"), {"OPENAI_API_KEY": "sk-test-0123456789"}
    )
    assert assembled.agent.toolbox.names[-1] == "shell" and assembled.agent.terminal is None
    assembled.store.close()


def test_an_openai_executor_needs_a_server(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="models.executor.api_base"):
        build_agent(
            config_at(tmp_path, '[executor]\nbackend = "openai"\n'), {"OPENAI_API_KEY": "sk-test-0123456789"}
        )


def test_a_local_executor_takes_a_kind_once_its_version_is_measured_on_it(tmp_path: Path) -> None:
    model_dir = build_tiny_model(tmp_path / "tiny", seed=2)
    config = config_at(
        tmp_path,
        f'[executor]\nbackend = "local"\nmodel_dir = "{model_dir}"\nthreshold = 0.5\nexploration = 0\n',
    )
    assembled = build_agent(config, {"OPENAI_API_KEY": "sk-test-0123456789"})
    terminal = assembled.agent.terminal
    assert isinstance(terminal.model, LocalBackend) and terminal.version is None  # no version yet: base
    query = "Copy the file a.txt to b.txt."
    assert "base has no held-out result on this kind yet" in terminal.route(query).reason
    kind = terminal.router.kinds.kind_of(query)
    assembled.store.routing.record_competence("base", {kind: (0.67, 6)})
    route = terminal.route("Copy the file notes.txt to old.txt.")  # the same kind
    assert route.backend is terminal.model and "0.67 on 6 tasks >= 0.50" in route.reason
    assembled.store.close()


def test_configured_secrets_are_redacted_from_trajectories(tmp_path: Path) -> None:
    assembled = build_agent(config_at(tmp_path, ""), {"OPENAI_API_KEY": "sk-test-0123456789"})
    store = assembled.store
    episode = store.trajectories.start_executor_episode("use the key")
    store.trajectories.record_call(
        episode,
        StoredCall(
            role="planner",
            model="m",
            prompt_ids=[],
            completion_ids=[],
            completion_logprobs=[],
            finish_reason="stop",
            text="the key is sk-test-0123456789",
        ),
    )
    [call] = store.trajectories.calls(episode)
    assert "sk-test-0123456789" not in call.text
    assert store.trajectories.executor_episode(episode).contains_secret
    store.close()


def test_sandbox_timeout_s_is_the_ceiling_of_every_command(tmp_path: Path, server: FakeOpenAI) -> None:
    models = "".join(
        f'[models.{slot}]\nmodel = "openai/{slot}"\napi_base = "{server.base_url}"\n'
        for slot in ("planner", "judge")
    )
    config = config_at(tmp_path, f"timeout_s = 1\n[executor]\nenabled = false\n{models}")
    assembled = build_agent(config, {"OPENAI_API_KEY": "sk-test-0123456789"}, stream=False)
    ask = {"command": "sleep 5", "timeout_s": 600}
    server.enqueue(tool_calls=[{"name": "shell", "arguments": ask}], model="planner")
    server.enqueue(text="It took too long.", model="planner")
    server.enqueue(text='{"score": 0.5, "reason": "cut short"}', model="judge")

    async def run_turn() -> list[object]:
        inbound = Inbound(platform="cli", chat_id="c", user_id="ana", text="sleep for a while")
        events = [event async for event in assembled.agent.turn(inbound)]
        await assembled.agent.close()
        return events

    started = time.monotonic()
    events = asyncio.run(run_turn())
    elapsed = time.monotonic() - started
    assembled.store.close()

    [result] = [event for event in events if isinstance(event, ToolReturned)]
    assert result.text.startswith("[timed out after 1 s")
    assert "timeout lowered from 600 s to 1 s" in result.text  # the planner is told
    assert elapsed < 4


def test_an_openai_executor_sends_its_api_key(tmp_path: Path, server: FakeOpenAI) -> None:
    executor = (
        '[executor]\nbackend = "openai"\n[models.executor]\nmodel = "openai/small"\n'
        f'api_base = "{server.base_url}"\napi_key_env = "TEMPER_EXECUTOR_API_KEY"\n'
    )
    environ = {"OPENAI_API_KEY": "sk-test-0123456789", "TEMPER_EXECUTOR_API_KEY": "executor-key-42"}
    assembled = build_agent(config_at(tmp_path, executor), environ)
    backend = assembled.agent.terminal.model
    server.enqueue(text="{}", model="small")

    async def call() -> None:
        assert isinstance(backend, OpenAIBackend)
        async with backend:
            await backend.complete([{"role": "user", "content": "ls"}], SamplingParams(max_tokens=4))

    asyncio.run(call())
    assembled.store.close()

    assert server.request_headers[-1]["authorization"] == "Bearer executor-key-42"


def test_the_users_table_reaches_the_agent_s_user_model(tmp_path: Path) -> None:
    config = config_at(
        tmp_path, "[users]\nextraction_every_turns = 3\nsession_idle_end_s = 120\nprofile_tokens = 50\n"
    )
    assembled = build_agent(config, {"OPENAI_API_KEY": "sk-test-0123456789"})
    settings = assembled.agent.settings
    assert (settings.user_model.every_turns, settings.user_model.idle_end_s) == (3, 120.0)
    assert settings.context.profile_tokens == 50
    assembled.store.close()
