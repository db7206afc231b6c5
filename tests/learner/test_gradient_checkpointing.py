"""Gradient checkpointing (`TrainSettings.gradient_checkpointing`, learner/policy.py): configured,
backward computes each decoder layer again; a step's loss and gradients equal those of the step
without it to float rounding; backward keeps less, within what learner/memory_estimate.py
says; and sampling between steps is untouched (no dropout, the same logprobs)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from learner.cycle import CycleSettings
from learner.logprobs import token_logprobs
from learner.memory_estimate import estimate_cycle
from learner.policy import LoraSettings, TrainablePolicy
from learner.rows import RowBatch, RowSettings
from learner.train import GRPOTrainer, StepMetrics, TrainSettings
from runtime.executor import LocalModel, SamplingParams, build_tiny_model
from tests.learner.test_train import sampled_batch

SETTINGS = TrainSettings(learning_rate=1e-2, lora=LoraSettings(rank=4), beta=0.05, checkpoint_every=0)
TOKENS = 256


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0, layers=2)


def layer_runs(policy: TrainablePolicy, ids: torch.Tensor) -> tuple[list[int], list[int]]:
    """How often each decoder layer began to run in a forward pass of `policy`, and in its backward
    (where the recomputation stops once it has what backward needs: counted as it starts)."""
    runs = [0, 0]
    layers = policy.module.get_base_model().model.layers
    handles = [
        layer.self_attn.register_forward_pre_hook(
            lambda *_, index=index: runs.__setitem__(index, runs[index] + 1)
        )
        for index, layer in enumerate(layers)
    ]
    try:
        logprobs, _ = token_logprobs(policy.module, ids[:, :-1], ids[:, 1:])
        forward = list(runs)
        logprobs.sum().backward()
    finally:
        for handle in handles:
            handle.remove()
    return forward, [total - before for total, before in zip(runs, forward, strict=True)]


def step_recording(trainer: GRPOTrainer, batch: RowBatch) -> tuple[StepMetrics, dict[str, torch.Tensor]]:
    """One step, and the gradient each trainable parameter had when the optimizer took it."""
    grads: dict[str, torch.Tensor] = {}
    handles = [
        parameter.register_post_accumulate_grad_hook(
            lambda p, name=name: grads.__setitem__(name, p.grad.detach().clone())
        )
        for name, parameter in trainer.policy.named_trainable().items()
    ]
    try:
        metrics = trainer.step(batch)
    finally:
        for handle in handles:
            handle.remove()
    return metrics, grads


def test_configured_backward_runs_each_layer_again(model_dir: Path) -> None:
    ids = torch.randint(0, 2000, (2, 40), generator=torch.Generator().manual_seed(0))
    model = LocalModel.load(model_dir)
    for checkpointing, again in ((False, [0, 0]), (True, [1, 1]), (False, [0, 0])):
        trainer = GRPOTrainer(model, replace(SETTINGS, gradient_checkpointing=checkpointing))
        assert layer_runs(trainer.policy, ids) == ([1, 1], again)
        with torch.no_grad():  # nothing to recompute for: the reference and sampling run once
            with trainer.policy.reference() as frozen:
                token_logprobs(frozen, ids[:, :-1], ids[:, 1:])
        trainer.policy.close()  # the model as it was: no adapter, nothing checkpointed
        assert model.adapters == {}


def test_a_checkpointed_step_equals_the_plain_one(model_dir: Path) -> None:
    plain_model, checkpointed_model = LocalModel.load(model_dir), LocalModel.load(model_dir)
    batch = sampled_batch(plain_model, seed=0)
    plain = GRPOTrainer(plain_model, SETTINGS)
    checkpointed = GRPOTrainer(checkpointed_model, replace(SETTINGS, gradient_checkpointing=True))

    ours, our_grads = step_recording(checkpointed, batch)
    theirs, their_grads = step_recording(plain, batch)

    assert ours.loss == pytest.approx(theirs.loss, abs=1e-6)
    assert ours.grad_norm == pytest.approx(theirs.grad_norm, rel=1e-5) and theirs.grad_norm > 0
    assert ours.kl_ref == pytest.approx(theirs.kl_ref, abs=1e-9)
    assert ours.entropy == pytest.approx(theirs.entropy, rel=1e-5)
    assert our_grads.keys() == their_grads.keys() and len(our_grads) > 0
    for name, grad in our_grads.items():
        torch.testing.assert_close(grad, their_grads[name], rtol=1e-4, atol=1e-7, msg=name)
    # Between steps the sampler samples as before: the captured logprobs are the trainer's.
    prompt = batch.rows[0].tokens[:12]
    sample = checkpointed.policy.sampler.sample(prompt, SamplingParams(max_tokens=6, seed=3))
    recomputed = checkpointed.policy.sampler.logprobs_of(prompt, sample.ids)
    assert sample.logprobs == pytest.approx(recomputed, abs=1e-5)
    again = checkpointed.step(sampled_batch(checkpointed.policy.sampler, seed=1))
    assert again.approx_kl < 1e-6  # on-policy: the sampler's logprobs are the checkpointed trainer's


def test_backward_keeps_less_with_checkpointing_about_as_estimated(model_dir: Path) -> None:
    rows = RowSettings(token_budget=TOKENS, max_row_tokens=TOKENS)
    kept = {}
    for checkpointing in (False, True):
        policy = TrainablePolicy.create(
            LocalModel.load(model_dir), LoraSettings(), gradient_checkpointing=checkpointing
        )
        weights = {p.untyped_storage().data_ptr() for p in policy.module.parameters()}
        saved: dict[int, int] = {}

        def keep(tensor: torch.Tensor, saved: dict[int, int] = saved) -> torch.Tensor:
            saved[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
            return tensor

        generator = torch.Generator().manual_seed(0)
        ids = torch.randint(0, policy.module.config.vocab_size, (1, TOKENS + 1), generator=generator)
        with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
            token_logprobs(policy.module, ids[:, :-1], ids[:, 1:], chunk_tokens=TOKENS)
        measured = sum(size for pointer, size in saved.items() if pointer not in weights)
        base = CycleSettings(rows=rows)
        settings = replace(
            base, train=replace(base.train, gradient_checkpointing=checkpointing, logprob_chunk_tokens=TOKENS)
        )
        estimate = estimate_cycle(model_dir, settings)
        kept[checkpointing] = (measured, estimate.activations)
    (plain, plain_estimate), (checkpointed, checkpointed_estimate) = kept[False], kept[True]
    # Only the layers' inputs (and the logits) stay for backward; the estimate bounds what stays
    # (it counts, besides, the one layer recomputed at a time and the logits' gradient).
    assert checkpointed < plain / 2
    assert checkpointed <= checkpointed_estimate < plain_estimate


def test_the_config_keys_reach_the_night() -> None:
    from connectors.config import Config
    from connectors.learning import night_settings

    config = Config.model_validate({"learner": {"gradient_checkpointing": True, "torch_threads": 3}})
    cycle = night_settings(config, iterations=1, seed=0, deadline=None).cycle
    assert cycle.train.gradient_checkpointing and cycle.torch_threads == 3
    default = night_settings(Config.model_validate({}), iterations=1, seed=0, deadline=None).cycle
    assert not default.train.gradient_checkpointing and default.torch_threads == 1


def test_distillation_checkpoints_too_and_learns_the_same(model_dir: Path) -> None:
    """SFT (the night's distillation, the warm start) with checkpointing: the layers run again in
    backward, and the trained adapter equals the plain run's to float rounding."""
    from learner.sft import SFTExample, SFTSettings, sft

    examples = [
        SFTExample([{"role": "user", "content": f"list the files in dir{i}"}], f"ls dir{i}") for i in range(6)
    ]
    trained = {}
    for checkpointing in (False, True):
        settings = SFTSettings(
            lora=LoraSettings(rank=4), max_epochs=2, learning_rate=3e-3, gradient_checkpointing=checkpointing
        )
        result = sft(LocalModel.load(model_dir), examples, settings)
        trained[checkpointing] = {n: p.detach().clone() for n, p in result.policy.named_trainable().items()}
        if checkpointing:
            ids = torch.tensor([[1, 5, 9, 13, 17, 21]])
            _, backward = layer_runs(result.policy, ids)
            assert backward == [1, 1]  # each layer again in backward
    assert trained[False].keys() == trained[True].keys()
    for name, value in trained[False].items():
        # Adam divides by sqrt(v): rounding in a near-zero gradient moves an element up to ~lr/1000.
        torch.testing.assert_close(trained[True][name], value, rtol=1e-4, atol=1e-5)
    assert any(
        name.endswith("lora_B.default.weight") and v.abs().sum() > 0 for name, v in trained[True].items()
    )


def test_the_night_distils_with_the_configured_lora_shape() -> None:
    """GRPO starts from the distilled adapter, whose own shape wins: it must be the configured one."""
    from connectors.config import Config
    from connectors.learning import night_settings

    config = Config.model_validate(
        {"learner": {"lora_rank": 16, "lora_alpha": 32, "gradient_checkpointing": True}}
    )
    night = night_settings(config, iterations=1, seed=0, deadline=None)
    assert night.distill.lora == night.cycle.train.lora
    assert night.distill.lora is not None and (night.distill.lora.rank, night.distill.lora.alpha) == (
        16,
        32.0,
    )
    assert night.distill.gradient_checkpointing
