"""The candidate chosen on validation (learner/selection.py): the best probed adapter goes back
into the policy after training, ties go to the later step, a resumed cycle still knows its best;
and a cycle with validation tasks probes the last step too and gates the adapter it kept."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from learner import ExecutorVersions
from learner.checkpoint import CheckpointError
from learner.cycle import CycleSettings, Probe, ProbePoint, run_cycle
from learner.policy import LoraSettings, TrainablePolicy
from learner.replay import ReplaySettings, as_served
from learner.selection import BestOnValidation
from learner.tasks import synthetic_suite
from learner.train import TrainSettings
from memory import MemoryStore
from runtime import BackendName
from runtime.executor import LocalModel, SamplingParams, build_tiny_model
from runtime.executor.loop import ExecutorSettings

LORA = LoraSettings(rank=4)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0, layers=1)


def weights_of(policy: TrainablePolicy) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in policy.named_trainable().items()}


def nudge(policy: TrainablePolicy, by: float) -> None:
    """Stand in for a training step: every trainable weight moves."""
    with torch.no_grad():
        for parameter in policy.trainable_parameters():
            parameter.add_(by)


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[name], b[name]) for name in a)


def test_the_best_probe_goes_back_in_and_ties_go_to_the_later_step(tmp_path: Path, tiny: Path) -> None:
    policy = TrainablePolicy.create(LocalModel.load(tiny), LORA)
    kept = BestOnValidation(tmp_path / "selected")
    assert kept.restore(policy) is None  # nothing kept: the policy is left as it is

    nudge(policy, 0.01)
    assert kept.offer(10, 0.40, policy)
    nudge(policy, 0.01)
    assert kept.offer(20, 0.55, policy)
    at_20 = weights_of(policy)
    nudge(policy, 0.01)
    assert not kept.offer(30, 0.30, policy)  # worse: the step 20 weights stay kept
    nudge(policy, 0.01)
    last = weights_of(policy)
    assert not kept.offer(40, 0.50, policy)
    assert not same(last, at_20)

    assert kept.restore(policy) == 20
    assert same(weights_of(policy), at_20)
    assert kept.history == [(10, 0.40), (20, 0.55), (30, 0.30), (40, 0.50)]

    nudge(policy, 0.01)
    at_50 = weights_of(policy)
    assert kept.offer(50, 0.55, policy)  # as good as step 20, and trained longer
    assert kept.restore(policy) == 50 and same(weights_of(policy), at_50)

    # A cycle resumed in the same directory: a new instance reads the best back from disk.
    nudge(policy, 0.5)
    again = BestOnValidation(tmp_path / "selected")
    assert (again.step, again.success) == (50, 0.55) and again.history == kept.history
    assert again.restore(policy) == 50 and same(weights_of(policy), at_50)
    assert not again.offer(60, 0.54, policy)  # the earlier best still counts


def test_weights_of_another_policy_are_refused(tmp_path: Path, tiny: Path) -> None:
    kept = BestOnValidation(tmp_path / "selected")
    kept.offer(1, 0.5, TrainablePolicy.create(LocalModel.load(tiny), LORA))
    other = TrainablePolicy.create(LocalModel.load(tiny), LoraSettings(rank=2))
    with pytest.raises(CheckpointError, match="other trainable parameters"):
        kept.restore(other)


def test_a_cycle_chooses_its_candidate_on_validation_and_gates_that_adapter(
    tmp_path: Path, tiny: Path, isolating_backend: BackendName
) -> None:
    torch.set_num_threads(1)
    suite = synthetic_suite(seed=0, per_family=2)
    train = [t for t in suite if t.split == "train"][:4]
    heldout = [t for t in suite if t.split == "heldout"]
    validation, test = heldout[0::2][:2], heldout[1::2][:2]
    one_turn = ExecutorSettings(max_turns=1, sampling=SamplingParams(temperature=1.0, max_tokens=16))
    replays = ReplaySettings(group_size=2, sandbox=isolating_backend, command_timeout_s=5, executor=one_turn)
    settings = CycleSettings(
        iterations=3, tasks_per_iteration=2, replay=replays,
        evaluation=as_served(ReplaySettings(group_size=2, seed=10_000, sandbox=isolating_backend,
                                            command_timeout_s=5, executor=one_turn)),
        train=TrainSettings(learning_rate=5e-2, lora=LORA),
    )  # fmt: skip
    points: list[ProbePoint] = []
    with MemoryStore.open(tmp_path / "memory.db") as store:
        result = asyncio.run(
            run_cycle(
                tiny, train, test, store, tmp_path / "cycle", ExecutorVersions(tmp_path / "data"), settings,
                probe=Probe(test, 2, points.append, choose_on=validation,
                            evaluation=replace(settings.evaluation, group_size=1)),
            )
        )  # fmt: skip
        probed_tasks = {
            group.split(":", 1)[1]
            for (group,) in store.db.execute(
                "select distinct group_id from episodes where group_id like 'probe%'"
            )
        }

    # Every second step and the last are probed, on validation and test together.
    assert [point.steps for point in points] == [2, 3]
    assert probed_tasks == {t.id for t in validation} | {t.id for t in test}
    for point in points:
        assert point.validation is not None
        assert {r.task for r in point.validation.results} == {t.id for t in validation}
        assert {r.task for r in point.curve.results} == {t.id for t in test}
        assert all(len([r for r in point.curve.results if r.task == t.id]) == 1 for t in test)
    # The candidate is the best on validation (ties: the later), and the gated adapter is its weights.
    best = max(points, key=lambda p: (p.validation.success if p.validation else 0.0, p.steps))
    assert result.candidate_step == best.steps
    assert [p.kept for p in points][-1] == (best.steps == 3)
    kept = load_file(str(tmp_path / "cycle" / "selected" / f"weights-{best.steps:06d}.safetensors"))
    saved = load_file(str(result.adapter_dir / "adapter_model.safetensors"))
    assert len(kept) == len(saved) and all(
        any(torch.equal(value, other) for other in saved.values()) for value in kept.values()
    )


def test_a_crash_between_the_weights_and_the_record_keeps_step_and_weights_together(
    tmp_path: Path, tiny: Path
) -> None:
    policy = TrainablePolicy.create(LocalModel.load(tiny), LORA)
    kept = BestOnValidation(tmp_path / "selected")
    nudge(policy, 0.01)
    kept.offer(20, 0.55, policy)
    at_20 = weights_of(policy)
    assert sorted(p.name for p in (tmp_path / "selected").iterdir()) == [
        "kept.json",
        "weights-000020.safetensors",
    ]

    # What a crash leaves: step 30's weights published but kept.json not yet naming them, and
    # a half-written file of step 40.
    nudge(policy, 0.01)
    save_file(dict(weights_of(policy)), str(tmp_path / "selected" / "weights-000030.safetensors"))
    (tmp_path / "selected" / ".partial-weights-000040.safetensors").write_bytes(b"\x00" * 10)

    resumed = BestOnValidation(tmp_path / "selected")
    assert resumed.restore(policy) == 20
    assert same(weights_of(policy), at_20)  # the step the record names, with its own weights

    nudge(policy, 0.02)
    assert resumed.offer(50, 0.60, policy)
    assert sorted(p.name for p in (tmp_path / "selected").iterdir()) == [
        "kept.json",
        "weights-000050.safetensors",
    ]


def test_a_record_written_before_it_named_its_weights_file_still_restores(tmp_path: Path, tiny: Path) -> None:
    policy = TrainablePolicy.create(LocalModel.load(tiny), LORA)
    nudge(policy, 0.03)
    at_10 = weights_of(policy)
    (tmp_path / "selected").mkdir()
    save_file(dict(at_10), str(tmp_path / "selected" / "weights.safetensors"))
    (tmp_path / "selected" / "kept.json").write_text('{"step": 10, "success": 0.5, "history": [[10, 0.5]]}')
    nudge(policy, 0.03)
    assert BestOnValidation(tmp_path / "selected").restore(policy) == 10
    assert same(weights_of(policy), at_10)
