"""Planner-written checks for the night's episode tasks: kept only when they pass after the
reference and fail on the start state, then the task's check for replays and for export.

The planner is FakeOpenAI (scripted replies); every run is in a real isolating sandbox.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from connectors.config import Config
from connectors.learning import night_settings
from learner import ExecutorVersions
from learner.cycle import CycleSettings
from learner.night import NightSettings, run_night
from learner.replay import ReplaySettings, as_served
from learner.tasks import (
    HarvestSettings,
    Task,
    VerifierSettings,
    check_task,
    export_task,
    harvest_episodes,
    import_tasks,
    observe_outcome,
    run_attempt,
    write_verifiers,
)
from learner.tasks.task import OUTCOME_VERIFIER
from learner.tasks.written_verifier import (
    FAILED_REFERENCE,
    MALFORMED,
    PASSED_START,
    UNREACHABLE,
    saved_name,
)
from learner.train import TrainSettings
from memory import MemoryStore
from runtime.executor import SamplingParams, build_tiny_model
from runtime.executor.loop import ExecutorSettings
from runtime.models import ChatModel, ModelSettings, RetryPolicy, close_model_clients
from runtime.sandbox import BackendName
from tests.fakes.openai_server import FakeOpenAI
from tests.learner.recorded import NOTES, record_episode

pytestmark = pytest.mark.anyio

ONE_TURN = ExecutorSettings(max_turns=1, sampling=SamplingParams(temperature=1.0, max_tokens=48))
SORTED = '#!/bin/bash\nsort -c sorted.txt && [ "$(sort notes.txt)" = "$(cat sorted.txt)" ]\n'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake
    await close_model_clients()  # the connections kept open belong to this test's event loop


def planner(base_url: str) -> ChatModel:
    return ChatModel(
        ModelSettings(
            "openai/planner", api_base=base_url, api_key="sk-test", retry=RetryPolicy(max_retries=0)
        )
    )


def reply(script: str) -> str:
    return json.dumps({"script": script})


async def episode_task(backend: BackendName, commands: list[str], number: int = 1) -> Task:
    """A task as the harvest makes one from an episode: scored by its reference outcome."""
    task = Task(
        id=f"ep{number}", family="episode", instruction="Sort notes.txt into sorted.txt.", files=NOTES,
        verifier=OUTCOME_VERIFIER, reference=tuple(commands), source=f"episode:{number}",
        executable=frozenset({"src/tool.sh"}), tags=("episode",),
    )  # fmt: skip
    return replace(task, outcome=await observe_outcome(task, task.reference, backend))


async def test_a_kept_check_scores_replays_is_exported_and_is_reused(
    server: FakeOpenAI, tmp_path: Path, isolating_backend: BackendName
) -> None:
    store = MemoryStore.open(tmp_path / "memory.db")
    await record_episode(store, tmp_path, ["sort notes.txt > sorted.txt", "wc -l < sorted.txt"])
    harvest = await harvest_episodes(
        store, tmp_path / "snapshots", since=0, settings=HarvestSettings(), backend=isolating_backend
    )
    (task,) = harvest.tasks
    server.enqueue(text="Here it is:\n" + reply(SORTED))
    saved = tmp_path / "verifiers"
    written = await write_verifiers(
        [task], planner(server.base_url), VerifierSettings(calls=2), backend=isolating_backend, saved=saved
    )
    assert (written.calls, written.kept, written.refused) == (1, [task.id], [])
    assert written.line() == "planner-written checks: 1 of 2 calls made, 1 kept"
    (checked,) = written.tasks
    assert checked.written_verifier and checked.outcome == task.outcome
    # The planner was shown the instruction, the reference, the end state's content and the answer.
    request = server.requests[0]["messages"][1]["content"]
    for shown in ("tidy the notes", "$ sort notes.txt > sorted.txt", "--- sorted.txt", "banana\ncherry"):
        assert shown in request
    assert "The answer it printed (checked separately): 3" in request

    # The check replaces the file comparison: a scratch file left behind passes now, not before;
    # the answer is still compared, and doing nothing fails.
    scratch = ["sort notes.txt > sorted.txt && touch scratch.tmp", "wc -l < sorted.txt"]
    assert (await run_attempt(checked, scratch, isolating_backend)).passed
    assert not (await run_attempt(task, scratch, isolating_backend)).passed
    wrong_answer = await run_attempt(checked, ["sort notes.txt > sorted.txt", "echo 4"], isolating_backend)
    assert not wrong_answer.passed and "the answer does not match" in wrong_answer.output
    unsorted = await run_attempt(checked, ["cp notes.txt sorted.txt", "echo x >> sorted.txt", "echo 3"],
                                 isolating_backend)  # fmt: skip
    assert not unsorted.passed
    assert (await check_task(checked, isolating_backend)).sound is True

    # Exported as tests/test.sh (the check, then answer.txt's); `temper tasks check` passes.
    folder = export_task(checked, tmp_path / "out")
    assert (folder / "tests" / "check.sh").read_text() == SORTED
    assert "check.sh" in (folder / "tests" / "test.sh").read_text()
    (imported,) = import_tasks(tmp_path / "out").tasks
    assert (await check_task(imported, isolating_backend)).sound is True
    passes = await run_attempt(imported, ["sort notes.txt > sorted.txt; touch t.tmp; echo 3 > answer.txt"],
                               isolating_backend)  # fmt: skip
    assert passes.passed

    # Saved, it is checked again and reused with no call (a resumed night, a held-out task again).
    assert [path.name for path in saved.iterdir()] == [saved_name(task)]
    again = await write_verifiers(
        [task], planner(server.base_url), VerifierSettings(calls=2), backend=isolating_backend, saved=saved
    )
    assert (again.calls, again.kept, again.reused, len(server.requests)) == (0, [task.id], 1, 1)
    assert again.tasks[0].verifier_files == checked.verifier_files


async def test_checks_that_do_not_tell_done_from_not_done_are_refused(
    server: FakeOpenAI, tmp_path: Path, isolating_backend: BackendName
) -> None:
    tasks = [await episode_task(isolating_backend, ["sort notes.txt > sorted.txt"], n) for n in (1, 2, 3, 4)]
    server.enqueue(text=reply("test -f summary.txt"))  # fails on the reference end state
    server.enqueue(text=reply("test -f notes.txt"))  # passes on the start state too
    server.enqueue(text="I would check that sorted.txt is sorted.")  # not the schema
    server.enqueue(text=json.dumps({"check": SORTED}))  # not the schema either
    written = await write_verifiers(
        tasks, planner(server.base_url), VerifierSettings(calls=10), backend=isolating_backend,
        saved=tmp_path / "verifiers",
    )  # fmt: skip
    assert written.calls == 4 and written.kept == []
    assert written.refused == [("ep1", FAILED_REFERENCE), ("ep2", PASSED_START), ("ep3", MALFORMED),
                               ("ep4", MALFORMED)]  # fmt: skip
    assert written.line() == (
        "planner-written checks: 4 of 10 calls made, 0 kept; refused: 1 failed on the reference, "
        "1 passed on the start state, 2 malformed reply"
    )
    assert written.tasks == tasks  # they keep the outcome rule
    assert all(t.verifier == OUTCOME_VERIFIER and not t.written_verifier for t in written.tasks)
    assert not (tmp_path / "verifiers").exists()


async def test_the_budget_caps_the_calls_and_0_makes_none(
    server: FakeOpenAI, isolating_backend: BackendName
) -> None:
    tasks = [await episode_task(isolating_backend, ["sort notes.txt > sorted.txt"], n) for n in (1, 2, 3)]
    off = await write_verifiers(
        tasks, planner(server.base_url), VerifierSettings(), backend=isolating_backend
    )
    assert off.tasks == tasks and off.calls == 0 and server.requests == []
    assert off.line() == "planner-written checks: off ([learner] verifier_calls = 0)"

    for _ in range(3):
        server.enqueue(text=reply(SORTED))
    written = await write_verifiers(
        tasks, planner(server.base_url), VerifierSettings(calls=2), backend=isolating_backend
    )
    assert written.calls == 2 and len(server.requests) == 2 and written.kept == ["ep1", "ep2"]
    assert [t.written_verifier for t in written.tasks] == [True, True, False]


async def test_an_unreachable_planner_leaves_the_outcome_rule_and_stops_asking(
    server: FakeOpenAI, isolating_backend: BackendName
) -> None:
    tasks = [await episode_task(isolating_backend, ["sort notes.txt > sorted.txt"], n) for n in (1, 2)]
    server.enqueue(error=500, message="the planner is down")
    written = await write_verifiers(
        tasks, planner(server.base_url), VerifierSettings(calls=5), backend=isolating_backend
    )
    assert written.tasks == tasks and written.calls == 1 and len(server.requests) == 1
    assert written.refused == [("ep1", UNREACHABLE)]
    assert "planner unreachable" in written.line() and "no more calls tonight" in written.line()


async def test_tasks_whose_prompt_would_show_a_secret_or_that_change_no_file_are_not_sent(
    server: FakeOpenAI, isolating_backend: BackendName
) -> None:
    token = "ghp_Kx81Lm2Np3Qr4St5Uv6Wx7Yz0Ab1Cd2Ef3Gh"
    leaky = await episode_task(isolating_backend, [f"echo 'GITHUB_TOKEN={token}' > .env"], 1)
    configured = await episode_task(isolating_backend, ["echo hunter2-operator-key > key.txt"], 2)
    answer_only = await episode_task(isolating_backend, ["wc -l < notes.txt"], 3)
    settings = VerifierSettings(calls=5, secrets=("hunter2-operator-key",))
    written = await write_verifiers(
        [leaky, configured, answer_only], planner(server.base_url), settings, backend=isolating_backend
    )
    assert server.requests == [] and written.calls == 0 and written.withheld == 2
    assert written.tasks == [leaky, configured, answer_only]
    assert "2 not sent (a secret in the prompt)" in written.line()
    assert "hunter2" not in repr(settings)


def test_the_config_sets_the_nights_budget() -> None:
    assert night_settings(Config(), 1, 0, None).verifiers.calls == 0
    config = Config.model_validate({"learner": {"verifier_calls": 3}})
    assert night_settings(config, 1, 0, None).verifiers.calls == 3


@pytest.mark.slow
async def test_a_night_writes_checks_within_its_budget_and_reports_them(
    server: FakeOpenAI, tmp_path: Path, isolating_backend: BackendName
) -> None:
    store = MemoryStore.open(tmp_path / "memory.db")
    for commands in (["sort notes.txt > sorted.txt"], ["sort -r notes.txt > sorted.txt"]):
        await record_episode(store, tmp_path, commands, query=f"please run {commands[0]}")
    replay = ReplaySettings(group_size=2, sandbox=isolating_backend, command_timeout_s=5, executor=ONE_TURN)
    settings = NightSettings(
        cycle=CycleSettings(
            iterations=1, tasks_per_iteration=1, replay=replay,
            evaluation=as_served(replace(replay, seed=10_000)), train=TrainSettings(learning_rate=1e-3),
        ),
        harvest=HarvestSettings(heldout_fraction=0.5),
        verifiers=VerifierSettings(calls=1),
        min_distill_examples=100,  # no distillation: the night's path to the cycle, quickly
    )  # fmt: skip
    server.enqueue(text=reply(SORTED))
    night = await run_night(
        build_tiny_model(tmp_path / "tiny", seed=0), store, tmp_path / "cycles" / "n1",
        ExecutorVersions(tmp_path / "data"), settings, since=0, snapshot_dir=tmp_path / "snapshots",
        planner=planner(server.base_url),
    )  # fmt: skip

    assert len(night.harvest.tasks) == 2 and len(server.requests) == 1
    trained = next(task for task in night.harvest.tasks if task.split == "train")
    assert night.verifiers is not None and night.verifiers.kept == [trained.id]
    assert "planner-written checks: 1 of 1 calls made, 1 kept" in night.lines()
    assert (tmp_path / "cycles" / "verifiers" / saved_name(trained)).read_text() == SORTED
