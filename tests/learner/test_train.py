"""learner/train.py on the tiny model: rows sampled by the model itself (so the captured logprobs
are the old policy), steps that move toward rewarded episodes, weights handed back to a
LocalModel, the KL term, and a training process killed mid-run that resumes to the same
weights as one that never stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from learner.checkpoint import CheckpointError
from learner.logprobs import token_logprobs
from learner.policy import LoraSettings
from learner.rows import RowBatch, RowSettings, build_rows
from learner.train import GRPOTrainer, TrainSettings
from memory.trajectory_records import ExecutorEpisode, RecordedCall, Trajectory
from runtime.executor import LocalModel, SamplingParams, build_tiny_model

torch.set_num_threads(1)

REPO = Path(__file__).resolve().parents[2]
ROWS = RowSettings(mask_truncated=False)  # a random tiny model rarely stops by itself
REWARDS = [1.0, 0.0, 0.0, 1.0]
OBSERVATION = "<|end|>\n<|user|>\n$ ls\nnotes.txt data.csv\n<|end|>\n<|assistant|>\n"


def sampled_episode(
    model: LocalModel, episode_id: int, reward: float, group: str, seed: int, temperature: float = 1.0
) -> Trajectory:
    """A two-call episode sampled by `model`: the second prompt extends the first prompt and
    completion with a tool observation, as the executor loop's would."""
    tokenizer = model.tokenizer
    messages = [
        {"role": "system", "content": "Reply with one JSON action."},
        {"role": "user", "content": group},
    ]
    prompt = tokenizer.encode_chat(messages)
    calls = []
    for index in range(2):
        sampling = SamplingParams(temperature=temperature, max_tokens=10, seed=seed * 2 + index)
        sample = model.sample(prompt, sampling)
        calls.append(
            RecordedCall(
                role="executor",
                model=model.name,
                prompt_ids=list(prompt),
                completion_ids=sample.ids,
                completion_logprobs=sample.logprobs,
                finish_reason=sample.finish_reason,
                sampling=sampling.as_dict(),
                id=episode_id * 10 + index,
                episode_id=episode_id,
                index=index,
                extends_previous=index > 0,
                mismatch=None,
                common_prefix=0,
                created_at=0.0,
            )
        )
        prompt = prompt + sample.ids + tokenizer.encode_text(OBSERVATION)
    episode = ExecutorEpisode(
        id=episode_id, kind="executor", task=group, status="done", reward=reward,
        reward_source="verifier", reward_reason=None, split="train", group_id=group,
        sandbox_backend="local", snapshot_id=None, snapshot_bytes=None, verifier=None,
        parent_episode_id=None, session_id=None, user_id=None, contains_secret=False,
        created_at=0.0, finished_at=None,
    )  # fmt: skip
    return Trajectory(episode, calls)


def sampled_batch(
    model: LocalModel,
    seed: int,
    groups: tuple[str, ...] = ("count lines", "list files"),
    temperature: float = 1.0,
) -> RowBatch:
    trajectories = [
        sampled_episode(
            model, 100 * g + i, reward, group, seed=1000 * seed + 10 * g + i, temperature=temperature
        )
        for g, group in enumerate(groups)
        for i, reward in enumerate(REWARDS)
    ]
    return build_rows(trajectories, ROWS)


def train_until(trainer: GRPOTrainer, steps: int, announce: bool = False) -> None:
    """The cycle in miniature: sample with the policy as trained so far, build rows, step."""
    while trainer.step_count < steps:
        trainer.step(sampled_batch(trainer.policy.sampler, trainer.step_count, groups=("count lines",)))
        if announce:
            print(f"step {trainer.step_count}", flush=True)


def episode_logprob(
    model: torch.nn.Module, row_tokens: list[int], mask: list[int], temperature: float = 1.0
) -> float:
    """Summed logprob of a row's trained tokens under `model` (its logits divided by `temperature`)."""
    inputs = torch.tensor([row_tokens[:-1]])
    targets = torch.tensor([row_tokens[1:]])
    with torch.no_grad():
        logprobs, _ = token_logprobs(model, inputs, targets, temperature=temperature)  # (1, T)
    return float((logprobs[0] * torch.tensor(mask[1:], dtype=torch.float32)).sum())


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)


@pytest.fixture(scope="module")
def local(model_dir: Path) -> LocalModel:
    return LocalModel.load(model_dir)


def test_a_step_is_on_policy_and_moves_toward_the_rewarded_episodes(local: LocalModel) -> None:
    batch = sampled_batch(local, seed=0)
    assert len(batch.rows) == 8  # two-call episodes that extend: one row each
    trainer = GRPOTrainer(local, TrainSettings(learning_rate=3e-3))
    before = [episode_logprob(trainer.policy.module, r.tokens, r.mask) for r in batch.rows]

    metrics = trainer.step(batch)

    assert metrics.step == 1 and metrics.rows == 8 and metrics.reward_mean == 0.5
    assert metrics.approx_kl < 1e-6  # captured logprobs == the trainer's: ratio 1
    assert metrics.clip_fraction == 0.0 and metrics.zero_variance_fraction == 0.0
    assert 0 < metrics.entropy < torch.log(torch.tensor(2000.0)).item()
    assert metrics.tokens == sum(len(r.tokens) for r in batch.rows) and metrics.grad_norm > 0
    after = [episode_logprob(trainer.policy.module, r.tokens, r.mask) for r in batch.rows]
    for row, old, new in zip(batch.rows, before, after, strict=True):
        assert (new > old) == (row.advantage > 0), (row.advantage, old, new)

    again = trainer.step(batch)  # a second update on the same rows: now off-policy
    assert again.approx_kl > 0 and again.step == 2


def test_updates_per_batch_are_that_many_updates_in_one_step(local: LocalModel) -> None:
    batch = sampled_batch(local, seed=4)
    settings = TrainSettings(
        learning_rate=3e-2, lora=LoraSettings(rank=4), epsilon_low=0.05, epsilon_high=0.05
    )
    one_at_a_time = GRPOTrainer(local, settings)
    singles = [one_at_a_time.step(batch) for _ in range(3)]
    together = GRPOTrainer(local, replace(settings, updates_per_batch=3))

    metrics = together.step(batch)

    assert (metrics.step, one_at_a_time.step_count) == (1, 3)  # one step, however many updates
    # Two adapters on the one LocalModel's weights (learner/policy.py), trained apart.
    for (name, mine), theirs in zip(
        together.policy.named_trainable().items(), one_at_a_time.policy.trainable_parameters(), strict=True
    ):
        assert torch.allclose(mine, theirs, atol=1e-6), name
    # The loss and entropy are the first update's (the sampling policy); the KL and the clip are
    # measured before the last, after two updates moved the policy away from the captured one.
    assert metrics.loss == pytest.approx(singles[0].loss, abs=1e-6)
    assert metrics.entropy == pytest.approx(singles[0].entropy, abs=1e-6)
    assert metrics.approx_kl == pytest.approx(singles[2].approx_kl, rel=1e-4) and metrics.approx_kl > 1e-4
    assert metrics.clip_fraction == pytest.approx(singles[2].clip_fraction) and metrics.clip_fraction > 0
    with pytest.raises(ValueError, match="updates_per_batch"):
        TrainSettings(updates_per_batch=0)


def test_at_a_temperature_the_old_policy_is_the_tempered_policy_not_the_captured_logprobs(
    local: LocalModel,
) -> None:
    hot = sampled_batch(local, seed=5, temperature=1.6)
    assert hot.stats.tempered_calls == 16
    # The captured logprobs are raw (temperature 1): garbage for a tempered ratio. Replace them
    # with anything at all, and a tempered step must not change.
    scrambled = replace(
        hot,
        packs=[
            [replace(row, old_logprobs=[lp - 3.0 for lp in row.old_logprobs]) for row in pack]
            for pack in hot.packs
        ],
    )
    settings = TrainSettings(
        learning_rate=3e-2, lora=LoraSettings(rank=4), temperature=1.6, updates_per_batch=2
    )
    trainers = [GRPOTrainer(local, settings) for _ in range(2)]
    before = [episode_logprob(trainers[0].policy.module, r.tokens, r.mask, temperature=1.6) for r in hot.rows]

    metrics = [trainer.step(batch) for trainer, batch in zip(trainers, (hot, scrambled), strict=True)]

    for mine, theirs in zip(
        trainers[0].policy.trainable_parameters(), trainers[1].policy.trainable_parameters(), strict=True
    ):
        assert torch.equal(mine, theirs)
    assert metrics[0] == replace(metrics[1], seconds=metrics[0].seconds)
    # The second update's ratios are against the first update's tempered policy: the first moved it.
    assert metrics[0].approx_kl > 1e-5
    after = [episode_logprob(trainers[0].policy.module, r.tokens, r.mask, temperature=1.6) for r in hot.rows]
    for row, old, new in zip(hot.rows, before, after, strict=True):
        assert (new > old) == (row.advantage > 0), (row.advantage, old, new)
    # At temperature 1 the captured logprobs are the old policy: scrambling them changes the step.
    raw = [GRPOTrainer(local, replace(settings, temperature=1.0)) for _ in range(2)]
    raw[0].step(hot), raw[1].step(scrambled)
    assert not all(
        torch.equal(a, b)
        for a, b in zip(
            raw[0].policy.trainable_parameters(), raw[1].policy.trainable_parameters(), strict=True
        )
    )
    with pytest.raises(ValueError, match="temperature"):
        TrainSettings(temperature=0.0)


def test_lora_trains_only_the_adapter_and_hands_the_weights_back(local: LocalModel, tmp_path: Path) -> None:
    batch = sampled_batch(local, seed=1)
    captured = batch.rows[0]
    trainer = GRPOTrainer(local, TrainSettings(learning_rate=1e-2, lora=LoraSettings(rank=4)))
    frozen = {
        n: p.detach().clone() for n, p in trainer.policy.module.named_parameters() if not p.requires_grad
    }
    for _ in range(3):
        trainer.step(batch)
    for name, parameter in trainer.policy.module.named_parameters():
        if not parameter.requires_grad:
            assert torch.equal(parameter, frozen[name]), name

    prompt = captured.tokens[:20]
    completion = captured.tokens[20:]
    trained = trainer.policy.sampler.logprobs_of(prompt, completion)  # the live weights
    assert trained != pytest.approx(local.logprobs_of(prompt, completion), abs=1e-3)

    trainer.save_adapter(tmp_path / "candidate")
    local.load_adapter("candidate", tmp_path / "candidate")
    try:
        assert local.logprobs_of(prompt, completion, adapter="candidate") == pytest.approx(trained, abs=1e-5)
        base = [lp for lp, m in zip(captured.old_logprobs[20:], captured.mask[20:]) if m]
        untouched = [lp for lp, m in zip(local.logprobs_of(prompt, completion), captured.mask[20:]) if m]
        assert untouched == pytest.approx(base, abs=1e-5)  # the LocalModel's base is as it was
    finally:
        local.unload_adapter("candidate")


def test_the_kl_term_measures_the_distance_from_the_adapter_disabled_base(local: LocalModel) -> None:
    batch = sampled_batch(local, seed=2)
    trainer = GRPOTrainer(local, TrainSettings(learning_rate=1e-2, beta=0.1))
    first = trainer.step(batch)
    assert first.kl_ref is not None and first.kl_ref < 1e-9  # LoRA starts with B = 0: the base
    for _ in range(3):
        last = trainer.step(batch)
    assert last.kl_ref is not None and last.kl_ref > 1e-5


def test_full_fine_tuning_with_a_frozen_reference(local: LocalModel) -> None:
    batch = sampled_batch(local, seed=3)
    trainer = GRPOTrainer(local, TrainSettings(lora=None, learning_rate=1e-3, beta=0.05))
    start = {n: p.detach().clone() for n, p in trainer.policy.module.named_parameters()}
    metrics = [trainer.step(batch) for _ in range(2)]
    assert all(p.requires_grad for p in trainer.policy.module.parameters())
    changed = [n for n, p in trainer.policy.module.named_parameters() if not torch.equal(p, start[n])]
    assert "model.embed_tokens.weight" in changed and len(changed) == len(start)
    assert metrics[1].kl_ref is not None and metrics[1].kl_ref > 0
    sample = trainer.policy.sampler.sample(batch.rows[0].tokens[:16], SamplingParams(max_tokens=4, seed=0))
    assert len(sample.ids) == 4


def test_a_batch_without_signal_changes_nothing(local: LocalModel) -> None:
    trajectories = [sampled_episode(local, i, 1.0, "easy", seed=i) for i in range(4)]
    batch = build_rows(trajectories, ROWS)
    trainer = GRPOTrainer(local, TrainSettings())
    metrics = trainer.step(batch)
    assert (metrics.step, metrics.rows, metrics.zero_variance_fraction) == (0, 0, 1.0)


RUN_UNTIL = """
import sys, torch
from runtime.executor import LocalModel
from learner.train import GRPOTrainer
from tests.learner.test_train import SETTINGS, train_until
trainer = GRPOTrainer(LocalModel.load(sys.argv[1]), SETTINGS, sys.argv[2])
train_until(trainer, int(sys.argv[3]), announce=True)
"""
SETTINGS = TrainSettings(learning_rate=5e-3, lora=LoraSettings(rank=4))
STEPS = 5


def test_training_killed_mid_run_resumes_to_the_same_weights(
    model_dir: Path, local: LocalModel, tmp_path: Path
) -> None:
    checkpoints = tmp_path / "checkpoints"
    environment = {**os.environ, "PYTHONPATH": str(REPO), "TOKENIZERS_PARALLELISM": "false"}
    errors = (tmp_path / "stderr").open("w")
    process = subprocess.Popen(
        [sys.executable, "-c", RUN_UNTIL, str(model_dir), str(checkpoints), str(STEPS)],
        cwd=REPO, env=environment, stdout=subprocess.PIPE, stderr=errors, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        for line in process.stdout:
            if line.strip() == "step 2":
                os.kill(process.pid, signal.SIGKILL)  # mid step 3, or mid its checkpoint
                break
    finally:
        process.kill()
        process.wait()
        errors.close()
    assert process.returncode == -signal.SIGKILL, (tmp_path / "stderr").read_text()[-2000:]

    resumed = GRPOTrainer(local, SETTINGS, checkpoints)
    assert 2 <= resumed.step_count < STEPS
    train_until(resumed, STEPS)
    uninterrupted = GRPOTrainer(local, SETTINGS)
    train_until(uninterrupted, STEPS)

    expected = uninterrupted.policy.named_trainable()
    for name, parameter in resumed.policy.named_trainable().items():
        torch.testing.assert_close(parameter, expected[name], atol=1e-6, rtol=1e-5)
    assert sorted(p.name for p in checkpoints.iterdir()) == ["step-000004", "step-000005"]


def test_a_checkpoint_of_other_parameters_is_refused(local: LocalModel, tmp_path: Path) -> None:
    trainer = GRPOTrainer(local, TrainSettings(lora=LoraSettings(rank=4)), tmp_path)
    trainer.step(sampled_batch(local, seed=4))
    with pytest.raises(CheckpointError, match="other trainable parameters"):
        GRPOTrainer(local, TrainSettings(lora=LoraSettings(rank=8)), tmp_path)
