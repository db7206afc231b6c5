"""learner/guidance.py: the references of the tasks no attempt solved are imitated after a GRPO
step; tasks with a success, without a reference, or not attempted are left to GRPO."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from learner.guidance import Guidance, GuidanceSettings, unsolved
from learner.policy import LoraSettings, TrainablePolicy
from learner.replay import Attempt
from learner.sft import target_loss
from learner.tasks import Task
from learner.warmstart import examples
from runtime.executor import LocalModel, build_tiny_model

torch.set_num_threads(1)


def task(name: str, reference: tuple[str, ...] = ("cp input.txt draft.txt",)) -> Task:
    return Task(
        id=name, family="copy_file", instruction=f"Copy the file input.txt to {name}.txt.",
        files={"input.txt": "x\n"}, verifier="true", reference=reference,
    )  # fmt: skip


def attempts(task_id: str, rewards: list[float]) -> list[Attempt]:
    return [
        Attempt(task_id, "copy_file", "train", i, i, reward, 0, 0, True) for i, reward in enumerate(rewards)
    ]


def test_only_attempted_tasks_with_a_reference_and_no_success_are_unsolved() -> None:
    tasks = [
        task("failed"),
        task("mixed"),
        task("no-reference", reference=()),
        task("not-drawn"),
        task("also-failed"),
    ]
    replays = attempts("failed", [0.0] * 4) + attempts("mixed", [0.0, 1.0, 0.0, 0.0])
    replays += attempts("no-reference", [0.0] * 4) + attempts("also-failed", [0.0, 0.0])
    assert [t.id for t in unsolved(tasks, replays)] == ["failed", "also-failed"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)


def test_a_step_makes_the_unsolved_references_likelier_and_a_solved_batch_changes_nothing(
    model_dir: Path,
) -> None:
    policy = TrainablePolicy.create(LocalModel.load(model_dir), LoraSettings(rank=8), seed=0)
    guidance = Guidance(policy, GuidanceSettings(), learning_rate=2e-3)
    failed, solved = task("failed"), task("solved", reference=("cp input.txt solved.txt",))
    before = {t.id: target_loss(policy, examples([t])) for t in (failed, solved)}
    weights = [p.detach().clone() for p in policy.trainable_parameters()]

    assert guidance.step([solved], attempts("solved", [1.0, 0.0])) == 0
    assert all(torch.equal(a, b) for a, b in zip(weights, policy.trainable_parameters()))

    for _ in range(3):
        assert (
            guidance.step([failed, solved], attempts("failed", [0.0] * 4) + attempts("solved", [1.0] * 4))
            == 1
        )
    assert target_loss(policy, examples([failed])) < before["failed"] - 0.1
    assert json.loads(examples([failed])[0].target)["commands"][0]["keystrokes"] == "cp input.txt draft.txt\n"


def test_at_most_max_examples_references_a_step(model_dir: Path) -> None:
    policy = TrainablePolicy.create(LocalModel.load(model_dir), LoraSettings(rank=4), seed=0)
    guidance = Guidance(policy, GuidanceSettings(max_examples=2), learning_rate=1e-3)
    tasks = [task(f"t{i}") for i in range(5)]
    replays = [a for t in tasks for a in attempts(t.id, [0.0, 0.0])]
    assert guidance.step(tasks, replays) == 2
