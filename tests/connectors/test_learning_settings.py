"""The night the config describes (connectors/learning.py `night_settings`): the configured
sandbox and its command timeout reach every replay, and the [learner] table reaches the harvest
and the gate."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from connectors.config import Config
from connectors.learning import night_settings
from learner.rows import RowSettings


def test_the_configured_sandbox_and_learner_table_reach_the_night() -> None:
    config = Config.model_validate({
        "sandbox": {"backend": "bwrap", "timeout_s": 7},
        "learner": {"heldout_fraction": 0.4, "max_workspace_mb": 3, "non_inferiority_margin": 0.02,
                    "learning_rate": 2e-3, "updates_per_batch": 2},
    })  # fmt: skip
    night = night_settings(config, iterations=5, seed=11, deadline=None)
    for replay in (night.cycle.replay, night.cycle.evaluation):
        assert replay.sandbox == "bwrap" and replay.command_timeout_s == 7
    assert night.cycle.evaluation.executor.sampling.constrained  # held-out replies as served
    assert night.harvest.heldout_fraction == 0.4 and night.harvest.max_workspace_bytes == 3 << 20
    assert night.cycle.gate.non_inferiority_margin == 0.02
    assert night.cycle.iterations == 5 and night.cycle.seed == 11
    assert night.cycle.train.learning_rate == 2e-3 and night.cycle.train.updates_per_batch == 2
    assert night.cycle.train.lora is not None  # versions are adapters
    assert night.cycle.guidance is None  # off unless [learner] guidance = true


def test_guidance_is_on_when_the_learner_table_says_so() -> None:
    config = Config.model_validate({"learner": {"guidance": True}})
    night = night_settings(config, iterations=1, seed=0, deadline=None)
    assert night.cycle.guidance is not None and night.cycle.guidance.max_examples > 0


def test_a_micro_batch_holds_the_longest_call_the_config_allows() -> None:
    default = night_settings(Config.model_validate({}), iterations=1, seed=0, deadline=None).cycle.rows
    assert default.max_row_tokens == 1952 + 96 and default.token_budget == 8192
    assert RowSettings().token_budget == 8192  # the config's default is the learner's
    # Long calls raise the budget with them (a budget below the longest row was a ValueError at night).
    long = Config.model_validate({"learner": {"max_prompt_tokens": 10_000}})
    rows = night_settings(long, iterations=1, seed=0, deadline=None).cycle.rows
    assert rows.max_row_tokens == rows.token_budget == 10_096
    small = Config.model_validate({"learner": {"max_prompt_tokens": 500, "micro_batch_tokens": 600}})
    assert night_settings(small, iterations=1, seed=0, deadline=None).cycle.rows.token_budget == 600


def test_a_micro_batch_below_the_longest_call_is_a_config_error() -> None:
    with pytest.raises(ValidationError, match=r"micro_batch_tokens = 2000 is below max_prompt_tokens \+ "
                       r"max_completion_tokens = 2048"):  # fmt: skip
        Config.model_validate({"learner": {"micro_batch_tokens": 2000}})


def test_guidance_with_several_training_processes_is_a_config_error() -> None:
    with pytest.raises(ValidationError, match="one training process"):
        Config.model_validate({"learner": {"guidance": True, "launcher": "accelerate", "processes": 2}})
    Config.model_validate({"learner": {"guidance": True, "launcher": "accelerate", "processes": 1}})


def test_auto_stays_auto_so_replays_pick_the_strongest_isolating_backend() -> None:
    night = night_settings(Config.model_validate({}), iterations=1, seed=0, deadline=None)
    assert night.cycle.replay.sandbox == "auto"  # resolved per replay: docker, then bwrap, never local
