"""learner/sft.py: the tiny random model learns the executor's JSON action format from four
reference actions in a few seconds, stopped by the caller's callback once greedy replies parse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from learner.policy import TrainablePolicy
from learner.sft import (
    EpochReport,
    SFTExample,
    SFTSettings,
    examples_from_trajectories,
    lr_factor,
    sft,
    target_loss,
    target_rows,
)
from memory.trajectory_records import ExecutorEpisode, RecordedCall, Trajectory
from runtime.executor import LocalModel, SamplingParams, build_tiny_model, prompts
from runtime.executor.actions import ActionParseError, parse_action

torch.set_num_threads(1)

TASKS = [
    ("Count the lines in data.csv.", "Count the lines.", "wc -l data.csv"),
    ("List the files in the workspace.", "List the files.", "ls -la"),
    ("Show the first line of notes.txt.", "Print the first line.", "head -n 1 notes.txt"),
    ("Find the files named *.log.", "Search for log files.", "find . -name '*.log'"),
]
GREEDY = SamplingParams(temperature=0.0, max_tokens=60)


def reference_action(analysis: str, command: str) -> str:
    commands = [{"keystrokes": command + "\n", "timeout": 10}]
    return json.dumps({"analysis": analysis, "commands": commands, "task_complete": False})


def chat(task: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": prompts.SYSTEM}, {"role": "user", "content": task}]


EXAMPLES = [SFTExample(chat(task), reference_action(analysis, command)) for task, analysis, command in TASKS]


def greedy_reply(model: LocalModel, task: str) -> str:
    sample = model.sample(model.tokenizer.encode_chat(chat(task)), GREEDY)
    return model.tokenizer.decode(sample.ids)


def parses(text: str) -> bool:
    try:
        parse_action(text)
    except ActionParseError:
        return False
    return True


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> LocalModel:
    return LocalModel.load(build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0))


def test_sft_teaches_the_action_format_until_the_callback_stops_it(local: LocalModel, tmp_path: Path) -> None:
    assert not parses(greedy_reply(local, TASKS[0][0]))  # random weights: no JSON yet
    seen: list[EpochReport] = []

    def on_epoch(report: EpochReport, policy: TrainablePolicy) -> bool:
        seen.append(report)
        return all(parses(greedy_reply(policy.sampler, task)) for task, _, _ in TASKS)

    settings = SFTSettings(learning_rate=3e-3, max_epochs=80, examples_per_step=4)
    result = sft(local, EXAMPLES, settings, on_epoch=on_epoch)

    assert result.stopped_early and result.epochs == seen and result.skipped == 0
    assert seen[-1].loss < seen[0].loss / 5
    assert target_loss(result.policy, EXAMPLES) < seen[0].loss / 5
    action = parse_action(greedy_reply(result.policy.sampler, TASKS[0][0]))
    assert action.commands and not action.task_complete
    assert not parses(greedy_reply(local, TASKS[0][0]))  # the LocalModel given is untouched

    saved = LocalModel.load(result.policy.save_model(tmp_path / "warm"))
    assert greedy_reply(saved, TASKS[0][0]) == greedy_reply(result.policy.sampler, TASKS[0][0])


def test_the_loss_is_on_the_target_tokens_only(local: LocalModel) -> None:
    [row] = target_rows(local.tokenizer, EXAMPLES[:1], max_row_tokens=4096)
    prompt = local.tokenizer.encode_chat(EXAMPLES[0].messages)
    target = local.tokenizer.encode_text(EXAMPLES[0].target) + [local.tokenizer.eos_id]
    assert row.tokens == prompt + target
    assert row.mask == [0] * len(prompt) + [1] * len(target)
    shortest = min(len(r.tokens) for r in target_rows(local.tokenizer, EXAMPLES, 4096))
    assert target_rows(local.tokenizer, EXAMPLES, max_row_tokens=shortest - 1) == []


def test_successful_training_episodes_become_examples() -> None:
    def trajectory(reward: float | None, split: str) -> Trajectory:
        episode = ExecutorEpisode(
            id=1, kind="executor", task="t", status="done", reward=reward, reward_source="verifier",
            reward_reason=None, split=split, group_id=None, sandbox_backend=None, snapshot_id=None,
            snapshot_bytes=None, verifier=None, parent_episode_id=None, session_id=None,
            user_id=None, contains_secret=False, created_at=0.0, finished_at=None,
        )  # fmt: skip
        call = RecordedCall(
            role="executor", model="planner:x", prompt_ids=[], completion_ids=[], completion_logprobs=[],
            finish_reason="stop", text=EXAMPLES[0].target, messages=EXAMPLES[0].messages, id=1,
            episode_id=1, index=0, extends_previous=False, mismatch=None, common_prefix=0, created_at=0.0,
        )  # fmt: skip
        return Trajectory(episode, [call])

    examples = examples_from_trajectories(
        [
            trajectory(1.0, "train"),
            trajectory(0.0, "train"),
            trajectory(1.0, "heldout"),
            trajectory(None, "train"),
        ]
    )
    assert examples == [EXAMPLES[0]]


def test_the_cosine_schedule_warms_up_peaks_and_decays_to_its_floor() -> None:
    settings = SFTSettings(schedule="cosine", warmup_fraction=0.1, final_lr_fraction=0.1)
    factors = [lr_factor(settings, step, 100) for step in range(100)]
    assert factors[0] == pytest.approx(0.1) and factors[9] == pytest.approx(1.0)
    assert factors[:10] == sorted(factors[:10])  # the warm-up rises
    assert factors[9:] == sorted(factors[9:], reverse=True)  # then it only falls
    assert factors[-1] == pytest.approx(0.1) and min(factors) == pytest.approx(0.1)
    assert factors[54] == pytest.approx(0.55, abs=0.02)  # halfway down the cosine
    assert {lr_factor(SFTSettings(), step, 100) for step in range(100)} == {1.0}
    with pytest.raises(ValueError, match="schedule"):
        SFTSettings(schedule="linear")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="warmup_fraction"):
        SFTSettings(warmup_fraction=1.0)


def test_sft_steps_at_the_scheduled_rate(local: LocalModel) -> None:
    """A first step at a tenth of the rate moves the weights about a tenth as far (Adam's first
    step is about the rate times the gradient's sign), so the schedule reaches the optimizer."""
    untrained = TrainablePolicy.create(local, None)  # a copy of the weights sft starts from
    before = {name: p.detach().clone() for name, p in untrained.module.named_parameters()}

    def moved(settings: SFTSettings) -> float:
        result = sft(local, EXAMPLES, settings, on_epoch=lambda report, policy: True)  # one step
        after = {name: p.detach() for name, p in result.policy.module.named_parameters()}
        return max(float((after[name] - weight).abs().max()) for name, weight in before.items())

    constant = moved(SFTSettings(learning_rate=1e-3, max_epochs=20, examples_per_step=4))
    warming = moved(
        SFTSettings(
            learning_rate=1e-3, max_epochs=20, examples_per_step=4, schedule="cosine", warmup_fraction=0.5
        )
    )
    assert constant == pytest.approx(1e-3, rel=0.2)
    assert warming == pytest.approx(constant / 10, rel=0.2)


def test_each_epoch_reports_the_rate_its_last_step_took(local: LocalModel) -> None:
    settings = SFTSettings(learning_rate=1e-3, max_epochs=4, examples_per_step=2, schedule="cosine")
    result = sft(local, EXAMPLES, settings)  # 2 steps an epoch, 8 in all
    rates = [report.learning_rate for report in result.epochs]
    assert rates == pytest.approx([1e-3 * lr_factor(settings, step, 8) for step in (1, 3, 5, 7)])
    assert rates[-1] == pytest.approx(1e-4)  # the floor, at the last step
