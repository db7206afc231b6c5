"""learner/loss.py against the clipped objective computed by hand; learner/logprobs.py chunked
against the model's own full logits."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
import torch

from learner.logprobs import token_logprobs
from learner.loss import policy_loss
from learner.micro_batch import collate
from learner.rows import Row
from runtime.executor.tiny import build_tiny_model

torch.set_num_threads(1)

EPS_LOW, EPS_HIGH = 0.2, 0.28


def hand_inputs() -> dict[str, torch.Tensor]:
    """Two rows of two tokens; old policy 0.5 everywhere, so the ratios are [1.5, 1.1], [0.6, 0.9].
    Row 0 has advantage +1, row 1 advantage -1; each token weighs 1/2 (per episode) / 2 episodes."""
    return {
        "new": torch.tensor([[0.75, 0.55], [0.30, 0.45]]).log().requires_grad_(),
        "old": torch.full((2, 2), 0.5).log(),
        "advantages": torch.tensor([1.0, -1.0]),
        "coefficients": torch.full((2, 2), 0.25),
    }


def test_the_loss_is_the_clipped_objective_computed_by_hand() -> None:
    x = hand_inputs()
    terms = policy_loss(
        x["new"], x["old"], x["advantages"], x["coefficients"], epsilon_low=EPS_LOW, epsilon_high=EPS_HIGH
    )
    # A = +1: min(1.5, clip -> 1.28) = 1.28 (clipped); min(1.1, 1.1) = 1.1.
    # A = -1: min(-0.6, -clip -> -0.8) = -0.8 (clipped); min(-0.9, -0.9) = -0.9.
    expected = -0.25 * (1.28 + 1.1 - 0.8 - 0.9)
    assert terms.loss.item() == pytest.approx(expected, abs=1e-6)
    assert terms.clipped.tolist() == [[True, False], [True, False]]

    terms.loss.backward()
    # Clipped tokens give no gradient; the others -c * A * ratio (d ratio / d logp = ratio).
    grad = x["new"].grad
    assert grad is not None
    assert grad.flatten().tolist() == pytest.approx([0.0, -0.25 * 1.1, 0.0, 0.25 * 0.9], abs=1e-6)

    ratios = [1.5, 1.1, 0.6, 0.9]
    assert terms.approx_kl.flatten().tolist() == pytest.approx(
        [r - 1 - math.log(r) for r in ratios], abs=1e-6
    )


def test_the_kl_term_is_the_k3_estimator_against_the_reference() -> None:
    x = hand_inputs()
    reference = torch.full((2, 2), 0.6).log()
    beta = 0.1
    terms = policy_loss(
        x["new"], x["old"], x["advantages"], x["coefficients"],
        epsilon_low=EPS_LOW, epsilon_high=EPS_HIGH, beta=beta, reference=reference,
    )  # fmt: skip
    probabilities = [0.75, 0.55, 0.30, 0.45]
    k3 = [0.6 / p - math.log(0.6 / p) - 1 for p in probabilities]
    assert terms.kl is not None
    assert terms.kl.flatten().tolist() == pytest.approx(k3, abs=1e-6)
    expected = -0.25 * (1.28 + 1.1 - 0.8 - 0.9) + beta * 0.25 * sum(k3)
    assert terms.loss.item() == pytest.approx(expected, abs=1e-6)


def test_on_policy_the_loss_is_the_policy_gradient() -> None:
    """ratio == 1: no clip, and the gradient is -c * A, REINFORCE with a group baseline."""
    new = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    terms = policy_loss(
        new, new.detach(), torch.tensor([0.5]), torch.tensor([[0.5, 0.5]]),
        epsilon_low=EPS_LOW, epsilon_high=EPS_HIGH,
    )  # fmt: skip
    terms.loss.backward()
    assert new.grad is not None and new.grad.tolist() == [[-0.25, -0.25]]
    assert not terms.clipped.any() and terms.approx_kl.abs().max() == 0


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    path: Path = build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)
    return AutoModelForCausalLM.from_pretrained(path).eval()


def test_chunked_logprobs_equal_the_full_logits(tiny_lm: torch.nn.Module) -> None:
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randint(0, 2000, (3, 37), generator=generator)  # (B, T)
    targets = torch.randint(0, 2000, (3, 37), generator=generator)  # (B, T)
    with torch.no_grad():
        full = torch.log_softmax(tiny_lm(input_ids=inputs).logits.float(), dim=-1)  # (B, T, V)
        expected = full.gather(-1, targets[..., None]).squeeze(-1)  # (B, T)
        expected_entropy = -(full.exp() * full).sum(-1)  # (B, T)
        marked = torch.rand(3, 37, generator=generator) < 0.5  # (B, T)
        chunked, entropy = token_logprobs(tiny_lm, inputs, targets, chunk_tokens=6, entropy_at=marked)
    assert entropy is not None
    torch.testing.assert_close(chunked, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(entropy, expected_entropy * marked, atol=1e-4, rtol=1e-5)


def test_logprobs_at_a_temperature_are_those_of_the_divided_logits(tiny_lm: torch.nn.Module) -> None:
    generator = torch.Generator().manual_seed(2)
    inputs = torch.randint(0, 2000, (2, 23), generator=generator)  # (B, T)
    targets = torch.randint(0, 2000, (2, 23), generator=generator)  # (B, T)
    everywhere = torch.ones(2, 23, dtype=torch.bool)
    with torch.no_grad():
        full = torch.log_softmax(tiny_lm(input_ids=inputs).logits.float() / 1.7, dim=-1)  # (B, T, V)
        hot, entropy = token_logprobs(
            tiny_lm, inputs, targets, chunk_tokens=5, entropy_at=everywhere, temperature=1.7
        )
        raw, raw_entropy = token_logprobs(tiny_lm, inputs, targets, entropy_at=everywhere)
    torch.testing.assert_close(hot, full.gather(-1, targets[..., None]).squeeze(-1), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(entropy, -(full.exp() * full).sum(-1), atol=1e-4, rtol=1e-5)
    assert (
        entropy is not None and raw_entropy is not None and (entropy > raw_entropy).all()
    )  # hotter: flatter
    assert not torch.allclose(hot, raw)
    with pytest.raises(ValueError, match="temperature"):
        token_logprobs(tiny_lm, inputs, targets, temperature=0.0)


def test_chunked_gradients_equal_unchunked(tiny_lm: torch.nn.Module) -> None:
    generator = torch.Generator().manual_seed(1)
    inputs = torch.randint(0, 2000, (2, 29), generator=generator)  # (B, T)
    targets = torch.randint(0, 2000, (2, 29), generator=generator)  # (B, T)
    weights = torch.rand(2, 29, generator=generator)  # (B, T)

    def gradients(chunk_tokens: int) -> list[torch.Tensor]:
        tiny_lm.zero_grad()
        logprobs, _ = token_logprobs(tiny_lm, inputs, targets, chunk_tokens=chunk_tokens)
        (logprobs * weights).sum().backward()
        return [p.grad.clone() for p in tiny_lm.parameters() if p.grad is not None]

    for chunked, whole in zip(gradients(4), gradients(10_000), strict=True):
        torch.testing.assert_close(chunked, whole, atol=1e-5, rtol=1e-4)
    tiny_lm.zero_grad()


def test_rows_sharing_a_prompt_compute_it_once_with_the_same_logprobs_and_gradients(
    tiny_lm: torch.nn.Module,
) -> None:
    from peft import LoraConfig, get_peft_model

    rng = torch.Generator().manual_seed(3)
    prompt = torch.randint(2, 2000, (40,), generator=rng).tolist()
    rows = []  # a group's attempts: one prompt, completions of different lengths, right-padded
    for index, length in enumerate((7, 3, 12, 5)):
        completion = torch.randint(2, 2000, (length,), generator=rng).tolist()
        rows.append(
            Row(
                index, "g", prompt + completion, [0] * 40 + [1] * length, [0.0] * (40 + length), 1.0, 1.0, 1.0
            )
        )
    micro = collate(rows, 1.0, "cpu")
    assert micro.shared == 40  # the prompt; the first completion token is each row's own
    weights = torch.rand(micro.mask.shape, generator=rng) * micro.mask  # (B, T)
    model = get_peft_model(
        copy.deepcopy(tiny_lm), LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False)
    )

    def computed(shared: int) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
        model.zero_grad()
        logprobs, entropy = token_logprobs(
            model, micro.inputs, micro.targets, chunk_tokens=64, entropy_at=micro.mask, shared=shared
        )
        (logprobs * weights).sum().backward()
        assert entropy is not None
        grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
        return logprobs.detach(), entropy, grads

    once, once_entropy, once_grads = computed(micro.shared)
    each, each_entropy, each_grads = computed(0)
    torch.testing.assert_close(once * micro.mask, each * micro.mask, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(once[:, :39], each[:, :39], atol=1e-5, rtol=1e-5)  # the prompt's own tokens
    torch.testing.assert_close(once_entropy, each_entropy, atol=1e-4, rtol=1e-5)
    assert len(once_grads) == len(each_grads) > 0
    for shared_grad, plain_grad in zip(once_grads, each_grads, strict=True):
        torch.testing.assert_close(shared_grad, plain_grad, atol=1e-5, rtol=1e-4)
    different = micro.inputs.clone()
    different[1, 5] += 1
    with pytest.raises(ValueError, match="differ"):
        token_logprobs(model, different, micro.targets, shared=micro.shared)
