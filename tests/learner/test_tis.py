"""Truncated importance sampling and the sampler/trainer mismatch (learner/mismatch.py,
learner/loss.py `is_weights`, learner/train.py `tis_cap`): the weight is the trainer/sampler
ratio capped at C, the gradient is the capped weight's, the figures are those of the ratios, and
with the trainer's own weights as the sampler nothing changes."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from learner.loss import policy_loss
from learner.mismatch import MismatchMeter, tis_weights
from learner.train import GRPOTrainer, TrainSettings
from runtime.executor import LocalModel, build_tiny_model
from tests.learner.test_train import sampled_batch

torch.set_num_threads(1)


def test_the_weight_is_the_ratio_capped_and_the_gradient_is_the_capped_weights() -> None:
    # Trainer/sampler ratios 3.0 (above the cap of 2), 1.5 and 0.5 (below it).
    trainer_old = torch.tensor([[0.6, 0.3, 0.1]]).log()
    sampler = torch.tensor([[0.2, 0.2, 0.2]]).log()
    weights = tis_weights(trainer_old, sampler, cap=2.0)
    assert weights.flatten().tolist() == pytest.approx([2.0, 1.5, 0.5], abs=1e-6)
    assert not weights.requires_grad

    # On the first update the policy is the trainer's old one: ratio 1, no clip; the gradient of
    # each token is -c * A * w, with w the capped weight (2.0, not 3.0).
    new = trainer_old.clone().requires_grad_()
    coefficients = torch.full((1, 3), 0.25)
    terms = policy_loss(
        new, trainer_old, torch.tensor([1.0]), coefficients,
        epsilon_low=0.2, epsilon_high=0.28, is_weights=weights,
    )  # fmt: skip
    terms.loss.backward()
    assert new.grad is not None
    assert new.grad.flatten().tolist() == pytest.approx([-0.25 * 2.0, -0.25 * 1.5, -0.25 * 0.5], abs=1e-6)
    assert terms.loss.item() == pytest.approx(-0.25 * (2.0 + 1.5 + 0.5), abs=1e-6)


def test_a_cap_must_be_positive_and_needs_temperature_one() -> None:
    with pytest.raises(ValueError, match="positive"):
        tis_weights(torch.zeros(1, 1), torch.zeros(1, 1), cap=0.0)
    with pytest.raises(ValueError, match="tis_cap"):
        TrainSettings(tis_cap=-1.0)
    with pytest.raises(ValueError, match="temperature 1"):
        TrainSettings(tis_cap=2.0, temperature=1.2)


def test_the_mismatch_figures_are_those_of_the_trained_tokens_ratios() -> None:
    ratios = [0.5, 1.0, 1.0, 1.5, 4.0]
    sampler = torch.full((1, 6), -1.0)
    trainer_old = torch.tensor([[*(math.log(r) - 1.0 for r in ratios), 5.0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 0]])  # the last token is not trained: not measured
    meter = MismatchMeter()
    meter.add(trainer_old[:, :3], sampler[:, :3], mask[:, :3])  # two micro-batches
    meter.add(trainer_old[:, 3:], sampler[:, 3:], mask[:, 3:])
    figures = meter.result(cap=2.0)
    assert figures is not None and figures.tokens == 5
    assert figures.kl == pytest.approx(sum(r - 1 - math.log(r) for r in ratios) / 5, rel=1e-5)
    assert figures.ratio_mean == pytest.approx(sum(ratios) / 5, rel=1e-5)
    assert figures.ratio_p50 == pytest.approx(1.0, rel=1e-5)
    assert figures.ratio_max == pytest.approx(4.0, rel=1e-5)
    assert figures.ratio_p5 == pytest.approx(0.6, rel=1e-5)  # linear between 0.5 and 1.0
    assert figures.ratio_p95 == pytest.approx(3.5, rel=1e-5)  # linear between 1.5 and 4.0
    assert figures.above_cap == pytest.approx(0.2)
    assert MismatchMeter().result(cap=2.0) is None


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)


def test_with_the_trainers_own_weights_as_sampler_the_corrected_step_is_the_uncorrected_one(
    model_dir: Path,
) -> None:
    batch = sampled_batch(LocalModel.load(model_dir), seed=3)
    settings = TrainSettings(learning_rate=3e-3, updates_per_batch=2)
    plain = GRPOTrainer(LocalModel.load(model_dir), settings)
    corrected = GRPOTrainer(
        LocalModel.load(model_dir), TrainSettings(learning_rate=3e-3, updates_per_batch=2, tis_cap=2.0)
    )

    first, second = plain.step(batch), corrected.step(batch)

    assert second.loss == pytest.approx(first.loss, abs=1e-6)
    for figures in (first.mismatch, second.mismatch):  # measured with or without the correction
        assert figures is not None and figures.tokens == first.trained_tokens
        assert figures.kl < 1e-9 and figures.ratio_max == pytest.approx(1.0, abs=1e-4)
        assert figures.above_cap == 0.0
    pairs = list(
        zip(plain.policy.trainable_parameters(), corrected.policy.trainable_parameters(), strict=True)
    )
    assert all(a is not b for a, b in pairs) and first.grad_norm > 0  # two trainers that both moved
    for a, b in pairs:
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    # Rounding is not news on the progress line; the figures stay in as_dict (metrics.jsonl).
    assert "mismatch" not in second.line() and second.as_dict()["mismatch"]["kl"] < 1e-9
