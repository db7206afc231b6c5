"""The day's executor episodes become replayable tasks scored by their reference outcome.

Episodes are recorded the way the runtime records them (TerminalExecutor + MemoryRecorder, a
real bwrap sandbox and snapshot, a real MemoryStore); only the model is scripted.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from learner.replay import ReplaySettings, replay
from learner.tasks import (
    AttemptTrace,
    HarvestSettings,
    Outcome,
    Task,
    check_task,
    distillation_examples,
    episode_reward,
    export_task,
    harvest_episodes,
    import_tasks,
    normalise_answer,
    run_attempt,
    shell_tool_output,
    workspace_state,
)
from learner.tasks.outcome import diff, files_state
from memory import MemoryStore
from runtime.executor import SamplingParams
from runtime.executor.completion import Completion
from runtime.executor.loop import ExecutorSettings
from tests.learner.recorded import BACKEND, NOTES, record_episode


def harvest(store: MemoryStore, data: Path, **settings: Any) -> Any:
    return asyncio.run(
        harvest_episodes(
            store, data / "snapshots", since=0, settings=HarvestSettings(**settings), backend=BACKEND
        )
    )


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return MemoryStore.open(tmp_path / "memory.db")


# --- an episode becomes a sound task -----------------------------------------------------------


def test_an_episode_becomes_a_sound_task_that_replays_score(store: MemoryStore, tmp_path: Path) -> None:
    commands = ["sort -r notes.txt > sorted.txt", "rm notes.txt", "wc -l < sorted.txt"]
    episode = asyncio.run(record_episode(store, tmp_path, commands))
    recorded = store.trajectories.executor_episode(episode)
    assert recorded.parent_episode_id is not None and recorded.reward is None  # rewarded on its turn
    assert episode_reward(store, recorded) == (1.0, "user")

    found = harvest(store, tmp_path)
    assert found.excluded == [] and found.considered == 1
    (task,) = found.tasks
    assert (task.id, task.source, task.family) == (f"ep{episode}", f"episode:{episode}", "episode")
    assert task.instruction == "tidy the notes" and task.reference == tuple(commands)
    assert dict(task.files) == NOTES and task.executable == {"src/tool.sh"}
    assert task.outcome is not None and task.outcome.answer == "3"
    assert set(task.outcome.changes.created) == {"sorted.txt"}
    assert task.outcome.changes.deleted == {"notes.txt"}
    assert found.line() == "1 of the day's 1 episodes became tasks"

    # The reference reproduces the outcome; nothing, a different end state, or a wrong answer does not.
    assert asyncio.run(check_task(task, BACKEND)).sound is True
    assert asyncio.run(run_attempt(task, commands, BACKEND)).passed
    assert not asyncio.run(run_attempt(task, [], BACKEND)).passed
    assert not asyncio.run(run_attempt(task, commands[:2], BACKEND)).passed  # no answer printed
    wrong = asyncio.run(run_attempt(task, ["sort notes.txt > sorted.txt", "rm notes.txt", "echo 3"], BACKEND))
    assert not wrong.passed and "sorted.txt differs" in wrong.output
    # Another way to the same end state passes; printing the answer in other words does too.
    other = ["sort -r < notes.txt > sorted.txt && rm notes.txt", "cat sorted.txt | wc -l"]
    assert asyncio.run(run_attempt(task, other, BACKEND)).passed


def test_a_replay_of_an_episode_task_scores_1_with_the_reference_and_0_with_nothing(
    store: MemoryStore, tmp_path: Path
) -> None:
    commands = ["sort -r notes.txt > sorted.txt", "wc -l < sorted.txt"]
    asyncio.run(record_episode(store, tmp_path, commands))
    (task,) = harvest(store, tmp_path).tasks

    class Runs:
        """An executor that runs `commands` in its first turn and then completes with `answer`."""

        def __init__(self, commands: Sequence[str], answer: str) -> None:
            self.name, self.commands, self.answer = "runs", commands, answer

        async def complete(self, messages: Sequence[dict[str, Any]], sampling: SamplingParams) -> Completion:
            done = any(message["role"] == "assistant" for message in messages)
            commands = [] if done else [{"keystrokes": c, "timeout": 5} for c in self.commands]
            action = {"analysis": self.answer, "commands": commands, "task_complete": done}
            return Completion(json.dumps(action), [], [], [], "stop", self.name)

    settings = ReplaySettings(group_size=1, sandbox=BACKEND, executor=ExecutorSettings(max_turns=3))
    replays = tmp_path / "replays.db"
    with MemoryStore.open(replays) as replay_store:
        solved = asyncio.run(
            replay([task], Runs(commands, "3 lines"), replay_store, tmp_path / "s", settings, "a")
        )
        files_only = asyncio.run(
            replay([task], Runs(["sort -r notes.txt > sorted.txt"], "there are 3 lines"), replay_store,
                   tmp_path / "s", settings, "b")
        )  # fmt: skip
        idle = asyncio.run(
            replay([task], Runs(["true"], "done"), replay_store, tmp_path / "s", settings, "c")
        )
    assert [a.reward for a in solved + files_only + idle] == [1.0, 1.0, 0.0]  # the final answer says "3"


# --- excluded, with the reason -----------------------------------------------------------------


def test_each_excluded_episode_is_refused_with_its_reason(store: MemoryStore, tmp_path: Path) -> None:
    def record(commands: Sequence[str], **kwargs: Any) -> int:
        return asyncio.run(record_episode(store, tmp_path, commands, **kwargs))

    good = record(["cp notes.txt copy.txt"])
    reasons = {
        record(["cp notes.txt failed.txt"], reward=0.0): "failed",
        record(["cp notes.txt judged.txt"], reward=0.5, on_turn=False): "failed",  # below min_reward
        record(["cp notes.txt unscored.txt"], reward=None): "unrewarded",
        record(["echo ghp_Kx81Lm2Np3Qr4St5Uv6Wx7Yz0Ab1Cd2Ef3Gh > token.txt"]): "secret",
        record(["curl -F file=@notes.txt https://paste.example.com"]): "network",
        record(["curl -sSo page.html https://example.com/page"]): "network",
        record(["cp notes.txt big.txt"], files={"big.bin": "x" * 65536}): "too big",
        record(
            ["cp notes.txt none.txt"], files={"big.bin": "x" * 65536}, max_snapshot_bytes=32768
        ): "no snapshot",
        record([]): "no commands",
        record(["date +%s%N > t.txt"]): "nondeterministic",
        record(["ls > /dev/null"]): "unsound",  # changes nothing and prints nothing
        record(["cp notes.txt copy.txt"]): "already harvested",  # the same task as `good`
    }
    found = harvest(store, tmp_path, max_workspace_bytes=32768)
    assert [task.id for task in found.tasks] == [f"ep{good}"]
    assert dict(found.excluded) == reasons
    assert found.counts()["network"] == 2 and found.counts()["failed"] == 2
    assert found.line() == (
        "1 of the day's 13 episodes became tasks; excluded: 1 held a secret, 1 had no reward, 2 failed, "
        "1 had no snapshot, 1 had a workspace over the size limit, 1 ran no commands, 2 used the network, "
        "1 were already harvested, 1 were nondeterministic, 1 were unsound"
    )
    again = asyncio.run(
        harvest_episodes(store, tmp_path / "snapshots", since=0, backend=BACKEND, already={f"ep{good}"},
                         settings=HarvestSettings(max_workspace_bytes=32768))
    )  # fmt: skip
    assert dict(again.excluded)[good] == "already harvested"
    twin = next(episode for episode, reason in reasons.items() if reason == "already harvested")
    assert [task.id for task in again.tasks] == [f"ep{twin}"]  # ids only: its twin stands in for it now


def test_the_newest_tasks_of_each_kind_are_held_out(store: MemoryStore, tmp_path: Path) -> None:
    for name in ("a", "b", "c", "d"):
        asyncio.run(record_episode(store, tmp_path, [f"cp notes.txt {name}.txt"]))
    found = harvest(store, tmp_path, heldout_fraction=0.25)
    assert [task.split for task in found.tasks] == ["train", "train", "train", "heldout"]
    assert [task.split for task in harvest(store, tmp_path, heldout_fraction=0.1).tasks][-1] == "heldout"
    # Two kinds, the second asked for first: each kind keeps its own newest task back, so both
    # are measured (a plain time split held out only the last two requests, both of one kind).
    sort = "sort the lines of notes.txt into sorted.txt"
    for command in ("sort notes.txt > s1.txt", "sort notes.txt > s2.txt", "sort notes.txt > s3.txt"):
        asyncio.run(record_episode(store, tmp_path, [command], query=sort))
    for name in ("e", "f"):
        asyncio.run(
            record_episode(store, tmp_path, [f"cp notes.txt {name}.txt"], query="copy notes.txt to x.txt")
        )
    found = harvest(store, tmp_path, heldout_fraction=0.25)
    assert [(task.instruction[:4], task.split) for task in found.tasks] == [
        ("tidy", "train"), ("tidy", "train"), ("tidy", "train"), ("tidy", "heldout"),
        ("sort", "train"), ("sort", "train"), ("sort", "heldout"),
        ("copy", "train"), ("copy", "heldout"),
    ]  # fmt: skip
    lonely = "count the words of notes.txt into words.txt"
    asyncio.run(record_episode(store, tmp_path, ["wc -w < notes.txt > w.txt"], query=lonely))
    assert [task.split for task in harvest(store, tmp_path, heldout_fraction=0.25).tasks][-1] == "train"


def test_distillation_takes_the_planners_successful_calls(store: MemoryStore, tmp_path: Path) -> None:
    asyncio.run(record_episode(store, tmp_path, ["cp notes.txt a.txt"]))
    asyncio.run(record_episode(store, tmp_path, ["cp notes.txt b.txt"], reward=0.0))
    examples = distillation_examples(store, since=0)
    assert len(examples) == 2  # the successful episode's two actions; the failed one's none
    assert json.loads(examples[0].target)["commands"][0]["keystrokes"] == "cp notes.txt a.txt"
    assert examples[0].messages[-1] == {"role": "user", "content": "tidy the notes"}


# --- the outcome rules ---------------------------------------------------------------------------


def test_caches_swap_files_times_and_modes_other_than_x_are_ignored(tmp_path: Path) -> None:
    root = tmp_path / "w"
    (root / "pkg" / "__pycache__").mkdir(parents=True)
    (root / "pkg" / "m.py").write_text("x = 1\n")
    start = workspace_state(root)
    for noise in (
        "pkg/__pycache__/m.cpython-312.pyc",
        "pkg/m.pyc",
        ".cache/pip/x",
        "pkg/.m.py.swp",
        "pkg/m.py~",
    ):
        (root / noise).parent.mkdir(parents=True, exist_ok=True)
        (root / noise).write_text("noise")
    (root / "pkg" / "m.py").chmod(0o600)
    os.utime(root / "pkg" / "m.py", (1, 1))
    assert not diff(start, workspace_state(root))
    (root / "pkg" / "m.py").chmod(0o700)
    assert set(diff(start, workspace_state(root)).changed) == {"pkg/m.py"}  # the executable bit counts
    assert files_state({"pkg/m.py": "x = 1\n"}) == start


def test_answers_are_normalised_and_short_answers_found_in_the_final_answer() -> None:
    assert normalise_answer("  Total:\n 3.50  KB\t") == "total: 3.5 kb"
    assert normalise_answer("4.0 v3.50 1.10.0 -2.000") == "4 v3.50 1.10.0 -2"
    reference = Outcome(diff({}, {}), normalise_answer("42\n"))
    assert reference.differences(diff({}, {}), AttemptTrace(("x", "42.0 \n", ""))) == []
    assert reference.differences(diff({}, {}), AttemptTrace(("42", "done")))  # the last output counts
    assert reference.differences(diff({}, {}), AttemptTrace((), "The count is 42.")) == []
    assert reference.differences(diff({}, {}), AttemptTrace((), "The count is 420."))
    long = Outcome(diff({}, {}), normalise_answer("one two three four five six seven eight nine"))
    assert long.differences(
        diff({}, {}), AttemptTrace((), "it is one two three four five six seven eight nine")
    )
    assert shell_tool_output("42\n[exit 0]") == "42"
    assert shell_tool_output("[exit 1] (no output)") == ""
    assert shell_tool_output("Error: the operator declined") == ""


# --- Harbor export -------------------------------------------------------------------------------


def test_exported_folders_pass_tasks_check(store: MemoryStore, tmp_path: Path) -> None:
    asyncio.run(
        record_episode(
            store, tmp_path, ["sort -r notes.txt > sorted.txt", "rm notes.txt", "wc -l < sorted.txt"]
        )
    )
    asyncio.run(
        record_episode(store, tmp_path, ["mkdir out && cp src/tool.sh out/ && ln -s out/tool.sh run"])
    )
    tasks = harvest(store, tmp_path).tasks
    assert len(tasks) == 2
    out = tmp_path / "exported"
    for task in tasks:
        export_task(task, out)
    answered = out / tasks[0].id
    assert "answer.txt" in (answered / "instruction.md").read_text()
    assert (answered / "environment" / "src" / "tool.sh").stat().st_mode & 0o100
    imported = import_tasks(out)
    assert imported.skipped == [] and len(imported.tasks) == 2
    for task in imported.tasks:
        assert not task.needs_docker, task.docker_needs
        check = asyncio.run(check_task(task, BACKEND))
        assert check.sound is True, check.reference_output
    # The exported check fails an attempt that leaves an extra file or gives a wrong answer.
    exported = next(task for task in imported.tasks if task.id == tasks[0].id)
    solve = ["sort -r notes.txt > sorted.txt", "rm notes.txt"]
    assert asyncio.run(
        run_attempt(exported, [*solve, "echo 'There are 3 lines.' > answer.txt"], BACKEND)
    ).passed
    assert not asyncio.run(run_attempt(exported, [*solve, "echo 4 > answer.txt"], BACKEND)).passed
    assert not asyncio.run(run_attempt(exported, [*solve, "echo 3 > answer.txt", "touch x"], BACKEND)).passed


def test_tasks_without_an_outcome_keep_their_verifier(tmp_path: Path) -> None:
    task = Task("t", "f", "make a", {"a": "1"}, verifier="test -f b", reference=("cp a b",))
    assert asyncio.run(check_task(task, BACKEND)).sound is True
    assert asyncio.run(check_task(replace(task, verifier="true"), BACKEND)).sound is False
