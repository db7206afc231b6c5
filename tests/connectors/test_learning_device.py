"""The [executor] device, dtype and attention keys and the [learner] LoRA and replay-length keys
reach the night (connectors/learning.py), their defaults being the learner's own; and a cycle
asked to train on a device that is not there is refused before anything is written."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import torch

from connectors.config import Config
from connectors.learning import LearnerSetupError, night_settings, run_learning_cycle
from learner.cycle import CycleSettings
from runtime.executor import build_tiny_model


def test_the_new_keys_reach_the_night() -> None:
    config = Config.model_validate({
        "executor": {"device": "cpu", "dtype": "bfloat16", "attn_implementation": "eager"},
        "learner": {"lora_rank": 16, "lora_alpha": 32, "lora_target_modules": ["q_proj", "v_proj"],
                    "max_turns": 6, "max_prompt_tokens": 4000, "max_completion_tokens": 512},
    })  # fmt: skip
    cycle = night_settings(config, iterations=1, seed=0, deadline=None).cycle
    assert (cycle.device, cycle.dtype, cycle.attn_implementation) == ("cpu", "bfloat16", "eager")
    assert cycle.train.lora is not None
    assert (cycle.train.lora.rank, cycle.train.lora.alpha) == (16, 32.0)
    assert cycle.train.lora.target_modules == ("q_proj", "v_proj")
    for replay in (cycle.replay, cycle.evaluation):
        assert replay.executor.max_turns == 6 and replay.executor.sampling.max_tokens == 512
    assert cycle.rows.max_row_tokens == 4512


def test_the_defaults_are_the_learners_own() -> None:
    cycle = night_settings(Config.model_validate({}), iterations=1, seed=0, deadline=None).cycle
    learner = CycleSettings()
    assert cycle.train.lora == learner.train.lora
    assert cycle.rows == learner.rows
    assert cycle.replay.executor == learner.replay.executor
    assert cycle.evaluation.executor == learner.evaluation.executor
    assert (cycle.device, cycle.dtype) == ("auto", "auto")  # on a CPU: cpu and float32, as before


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine where torch sees no GPU")
def test_a_device_that_is_not_there_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    model_dir = build_tiny_model(tmp_path / "tiny")
    config = Config.model_validate({
        "data_dir": str(tmp_path / "data"),
        "executor": {"backend": "local", "model_dir": str(model_dir), "device": "cuda"},
    })  # fmt: skip
    said: list[str] = []
    with pytest.raises(LearnerSetupError, match="torch sees no CUDA GPU"):
        asyncio.run(run_learning_cycle(config, minutes=1, say=said.append))
    assert not (tmp_path / "data" / "learner").exists() and said == []


@pytest.mark.parametrize(
    ("targets", "missing"), [(["nope_proj"], "'nope_proj'"), (["q_proj", "v_prj"], "'v_prj'")]
)
def test_a_target_module_the_model_has_not_is_refused_before_anything_is_written(
    tmp_path: Path, targets: list[str], missing: str
) -> None:
    """peft raises deep in the cycle when no listed module matches, and skips a misspelled one
    beside others that do; either is refused first, with the names that would match."""
    model_dir = build_tiny_model(tmp_path / "tiny")
    config = Config.model_validate({
        "data_dir": str(tmp_path / "data"),
        "executor": {"backend": "local", "model_dir": str(model_dir), "device": "cpu"},
        "learner": {"lora_target_modules": targets},
    })  # fmt: skip
    said: list[str] = []
    with pytest.raises(LearnerSetupError) as refused:
        asyncio.run(run_learning_cycle(config, minutes=1, say=said.append))
    assert f"lora_target_modules names {missing}, but no module of {model_dir}" in str(refused.value)
    assert "q_proj, up_proj, v_proj" in str(refused.value)  # what would match, sorted
    assert not (tmp_path / "data" / "learner").exists() and said == []


@pytest.mark.parametrize(
    ("made", "refusal"),
    [
        (False, "is not a directory"),
        (True, "holds no config.json, so it is not a Hugging Face model directory"),
    ],
)
def test_a_model_dir_without_a_model_is_refused_before_anything_is_written(
    tmp_path: Path, made: bool, refusal: str
) -> None:
    model_dir = tmp_path / "models" / "executor"
    if made:
        model_dir.mkdir(parents=True)
    config = Config.model_validate({
        "data_dir": str(tmp_path / "data"),
        "executor": {"backend": "local", "model_dir": str(model_dir), "device": "cpu"},
    })  # fmt: skip
    said: list[str] = []
    with pytest.raises(LearnerSetupError, match=f"model_dir {model_dir} {refusal}"):
        asyncio.run(run_learning_cycle(config, minutes=1, say=said.append))
    assert not (tmp_path / "data" / "learner").exists() and said == []
