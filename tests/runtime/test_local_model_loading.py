"""LocalModel.load's device, dtype and attention implementation: auto is cpu and float32 here,
as before; a dtype or attention implementation asked for is what loads, and what the learner's
copy of the weights loads with; a device that is not there is refused, saying what to do."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from learner.policy import LoraSettings, TrainablePolicy
from runtime.executor import ExecutorLoadError, LocalModel, build_tiny_model


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), layers=1)


@pytest.mark.skipif(torch.cuda.is_available(), reason="auto is cuda where torch sees a GPU")
def test_auto_is_cpu_and_float32_without_a_gpu(model_dir: Path) -> None:
    model = LocalModel.load(model_dir, device="auto", dtype="auto")
    assert model.device == torch.device("cpu") and model.dtype == torch.float32
    with pytest.raises(ExecutorLoadError, match='torch sees no CUDA GPU.*device = "cpu"'):
        LocalModel.load(model_dir, device="cuda:0")


def test_dtype_and_attention_reach_the_model_and_the_learners_copy(model_dir: Path) -> None:
    model = LocalModel.load(model_dir, dtype="bfloat16", attn_implementation="eager")
    assert model.dtype == torch.bfloat16 and model.attn_implementation == "eager"
    policy = TrainablePolicy.create(model, LoraSettings())
    base = {p.dtype for p in policy.module.parameters() if not p.requires_grad}
    assert base == {torch.bfloat16}
    assert policy.module.config._attn_implementation == "eager"


def test_a_directory_without_a_model_is_named_plainly(tmp_path: Path) -> None:
    with pytest.raises(ExecutorLoadError, match=r"is not a directory: give a model directory$"):
        LocalModel.load(tmp_path / "missing")
    (tmp_path / "empty").mkdir()  # the tokenizer's own error would list the converters it lacks
    with pytest.raises(
        ExecutorLoadError, match=r"empty holds no config.json, so it is not a Hugging Face model"
    ):
        LocalModel.load(tmp_path / "empty")


def test_unknown_settings_are_refused(model_dir: Path) -> None:
    with pytest.raises(ExecutorLoadError, match="unknown device 'gpu'"):
        LocalModel.load(model_dir, device="gpu")
    with pytest.raises(ExecutorLoadError, match="unknown dtype"):
        LocalModel.load(model_dir, dtype="float8")
    with pytest.raises(ExecutorLoadError, match="cannot load"):
        LocalModel.load(model_dir, attn_implementation="no_such_kernel")
