"""connectors.assembly: the agent a config describes, executor included."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.assembly import build_agent
from connectors.config import ConfigError, load_config
from memory import StoredCall
from runtime.executor import LocalBackend, build_tiny_model


def config_at(tmp_path: Path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(f'data_dir = "{tmp_path / "data"}"\n[sandbox]\nbackend = "local"\n{text}')
    # An environment of our own: no secrets file beside the config, no TEMPER_* from outside.
    return load_config(path, {"OPENAI_API_KEY": "sk-test-0123456789", "XDG_CONFIG_HOME": str(tmp_path)})


def test_the_planner_stands_in_for_the_executor_by_default(tmp_path: Path) -> None:
    assembled = build_agent(config_at(tmp_path, ""), {"OPENAI_API_KEY": "sk-test-0123456789"})
    assert assembled.agent.toolbox.names[-1] == "terminal_task"
    route = assembled.agent.terminal.route()
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


def test_a_local_executor_takes_over_once_its_held_out_success_is_enough(tmp_path: Path) -> None:
    model_dir = build_tiny_model(tmp_path / "tiny", seed=2)
    config = config_at(
        tmp_path, f'[executor]\nbackend = "local"\nmodel_dir = "{model_dir}"\nthreshold = 0.5\n'
    )
    assembled = build_agent(config, {"OPENAI_API_KEY": "sk-test-0123456789"})
    terminal = assembled.agent.terminal
    assert isinstance(terminal.model, LocalBackend)
    assert "no held-out result yet" in terminal.route().reason
    store = assembled.store
    for reward in (1.0, 0.0, 1.0):  # held-out episodes the local model ran: mean 0.67
        episode = store.trajectories.start_executor_episode("task", split="heldout")
        store.trajectories.record_call(
            episode,
            StoredCall(
                role="executor",
                model=terminal.model.model.name,
                prompt_ids=[1, 2],
                completion_ids=[3],
                completion_logprobs=[-0.5],
                finish_reason="stop",
            ),
        )
        store.episodes.record_reward(episode, reward, "verifier", "check")
    assert terminal.route().backend is terminal.model
    store.close()


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
