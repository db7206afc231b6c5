"""Training stretches may use more torch threads than sampling does (learner/threads.py): a GRPO
step and an SFT epoch run with their `threads`, and the process's count is back before anything
samples again (an SFT epoch's callback samples: it sees the count from before)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch

from learner.policy import LoraSettings
from learner.sft import SFTSettings, sft
from learner.threads import training_threads
from learner.train import GRPOTrainer, TrainSettings
from runtime.executor import LocalModel, build_tiny_model
from tests.learner.test_sft import EXAMPLES
from tests.learner.test_train import sampled_batch


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> LocalModel:
    return LocalModel.load(build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0))


@pytest.fixture
def one_thread() -> object:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@contextmanager
def threads_of_module_calls() -> Iterator[list[int]]:
    """torch's thread count at every module call made inside the block."""
    seen: list[int] = []
    original = torch.nn.Module.__call__

    def counting(self: torch.nn.Module, *args: object, **kwargs: object) -> object:
        seen.append(torch.get_num_threads())
        return original(self, *args, **kwargs)

    torch.nn.Module.__call__ = counting  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        torch.nn.Module.__call__ = original  # type: ignore[method-assign]


def test_a_grpo_step_trains_with_its_threads_and_restores_the_count(
    local: LocalModel, one_thread: object
) -> None:
    trainer = GRPOTrainer(local, TrainSettings(lora=LoraSettings(rank=4), threads=2, checkpoint_every=0))
    batch = sampled_batch(trainer.policy.sampler, seed=0)
    try:
        with threads_of_module_calls() as seen:
            metrics = trainer.step(batch)
    finally:
        trainer.policy.close()
    assert metrics.rows > 0 and seen and set(seen) == {2}
    assert torch.get_num_threads() == 1


def test_an_sft_epoch_trains_with_its_threads_and_its_callback_samples_with_the_count_before(
    local: LocalModel, one_thread: object
) -> None:
    in_callback: list[int] = []

    def on_epoch(report: object, policy: object) -> bool:
        in_callback.append(torch.get_num_threads())
        return False

    settings = SFTSettings(max_epochs=2, examples_per_step=4, threads=2, lora=LoraSettings(rank=4))
    with threads_of_module_calls() as seen:
        result = sft(local, EXAMPLES[:8], settings, on_epoch=on_epoch)
    result.policy.close()
    assert seen and set(seen) == {2}
    assert in_callback == [1, 1]
    assert torch.get_num_threads() == 1


def test_none_leaves_the_count_alone_and_a_bad_count_is_refused(one_thread: object) -> None:
    with training_threads(None):
        assert torch.get_num_threads() == 1
    with pytest.raises(ValueError, match="at least 1"):
        with training_threads(0):
            pass
    with pytest.raises(ValueError, match="threads must be at least 1"):
        TrainSettings(threads=0)
    with pytest.raises(ValueError, match="threads must be at least 1"):
        SFTSettings(threads=0)


def test_the_count_is_restored_when_training_fails(one_thread: object) -> None:
    with pytest.raises(RuntimeError):
        with training_threads(2):
            assert torch.get_num_threads() == 2
            raise RuntimeError("a step failed")
    assert torch.get_num_threads() == 1
