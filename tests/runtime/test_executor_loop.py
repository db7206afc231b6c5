"""The executor sub-agent end to end: the planner calls terminal_task, the executor (here the
planner model standing in, over real HTTP to the fake OpenAI server) runs JSON actions in a
real sandbox, and every call lands in memory at token level, replayable from its snapshot."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from memory import MemoryStore
from runtime.agent import Agent, AgentSettings
from runtime.events import ToolReturned
from runtime.executor import PlannerBackend, build_tiny_model
from runtime.executor.actions import ActionParseError, parse_action
from runtime.executor.loop import ExecutorSettings
from runtime.executor.recording import MemoryRecorder
from runtime.executor.terminal import TerminalExecutor
from runtime.inbound import Inbound
from runtime.models import ChatModel, ModelSettings, RetryPolicy
from runtime.sandbox import SandboxOptions, Snapshot, open_sandbox
from runtime.tools import builtin_toolbox
from runtime.workspaces import Workspaces
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.anyio


def model(server: FakeOpenAI, name: str) -> ChatModel:
    return ChatModel(
        ModelSettings(
            f"openai/{name}", api_base=server.base_url, api_key="sk-test", retry=RetryPolicy(max_retries=0)
        )
    )


def action(analysis: str, *commands: str, done: bool = False) -> str:
    return json.dumps(
        {
            "analysis": analysis,
            "commands": [{"keystrokes": c + "\n", "timeout": 10} for c in commands],
            "task_complete": done,
        }
    )


def make_agent(
    store: MemoryStore,
    server: FakeOpenAI,
    tmp_path: Path,
    tokenizer_dir: Path | None = None,
    settings: AgentSettings | None = None,
    **executor,
) -> tuple[Agent, TerminalExecutor]:
    snapshots = tmp_path / "snapshots"
    terminal = TerminalExecutor(
        PlannerBackend(model(server, "executor"), tokenizer_dir=tokenizer_dir),
        ExecutorSettings(max_turns=4),
        recorder=MemoryRecorder(store, snapshots),
        **executor,
    )
    workspaces = Workspaces("local", SandboxOptions(), snapshots, store.set_workspace_snapshot)
    agent = Agent(
        store,
        model(server, "planner"),
        builtin_toolbox(executor=True),
        workspaces,
        settings=settings,
        terminal=terminal,
    )
    return agent, terminal


async def turn(agent: Agent, text: str) -> list:
    events = [
        event async for event in agent.turn(Inbound(platform="cli", chat_id="c", user_id="ana", text=text))
    ]
    await agent.drain()
    return events


def executor_episodes(store: MemoryStore) -> list[int]:
    return [row[0] for row in store.db.execute("select id from episodes where kind = 'executor' order by id")]


async def test_terminal_task_runs_the_executor_and_records_every_call(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path
) -> None:
    agent, _ = make_agent(store, server, tmp_path)
    server.enqueue(
        tool_calls=[{"name": "terminal_task", "arguments": {"query": "count the lines of data.txt"}}],
        model="planner",
    )
    server.enqueue(text=action("make the file", "printf 'a\\nb\\nc\\n' > data.txt"), model="executor")
    server.enqueue(
        text="Sure! " + action("count", "wc -l < data.txt"), model="executor"
    )  # text around the JSON is forgiven
    server.enqueue(text=action("data.txt has 3 lines", done=True), model="executor")
    server.enqueue(text="It has 3 lines.", model="planner")
    events = await turn(agent, "how many lines in data.txt?")
    [report] = [e for e in events if isinstance(e, ToolReturned)]
    assert "data.txt has 3 lines" in report.text and "wc -l < data.txt" in report.text
    # The executor saw each command's output.
    executor_requests = [r for r in server.requests if r["model"] == "executor"]
    assert (
        "3" in executor_requests[2]["messages"][-1]["content"]
        and "[exit 0]" in executor_requests[2]["messages"][-1]["content"]
    )
    [episode_id] = executor_episodes(store)
    episode = store.trajectories.executor_episode(episode_id)
    assert (episode.status, episode.task, episode.sandbox_backend) == (
        "succeeded",
        "count the lines of data.txt",
        "local",
    )
    assert episode.snapshot_id is not None
    calls = store.trajectories.calls(episode_id)
    assert [c.role for c in calls] == ["planner"] * 3
    assert calls[2].text == action("data.txt has 3 lines", done=True)
    assert calls[0].messages[1] == {"role": "user", "content": "count the lines of data.txt"}
    await agent.close()


async def test_a_malformed_action_gets_one_correction(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path
) -> None:
    agent, _terminal = make_agent(store, server, tmp_path)
    server.enqueue(
        tool_calls=[{"name": "terminal_task", "arguments": {"query": "list files"}}], model="planner"
    )
    server.enqueue(text="I will run ls", model="executor")
    server.enqueue(text=action("nothing here", done=True), model="executor")
    server.enqueue(tool_calls=[{"name": "terminal_task", "arguments": {"query": "again"}}], model="planner")
    server.enqueue(text="no json", model="executor")
    server.enqueue(text="{still not valid", model="executor")
    server.enqueue(text="done", model="planner")
    events = await turn(agent, "list my files")
    first, second = [e for e in events if isinstance(e, ToolReturned)]
    correction = [r for r in server.requests if r["model"] == "executor"][1]["messages"][-1]["content"]
    assert "not a valid action" in correction
    assert "nothing here" in first.text
    assert "gave up" in second.text
    completed, gave_up = executor_episodes(store)
    assert store.trajectories.executor_episode(completed).status == "succeeded"
    assert store.trajectories.executor_episode(gave_up).status == "failed"
    assert len(store.trajectories.calls(gave_up)) == 2
    counts = store.db.execute(
        "select parse_failures, timeouts from episodes where id in (?, ?) order by id", (completed, gave_up)
    ).fetchall()
    assert counts == [(1, 0), (2, 0)]
    await agent.close()


async def test_the_command_timeout_ceiling_holds_for_the_executor(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path
) -> None:
    agent, _ = make_agent(store, server, tmp_path, settings=AgentSettings(command_timeout_s=1))
    asks = {
        "analysis": "wait, then say hi",
        "commands": [{"keystrokes": "sleep 5\n", "timeout": 600}, {"keystrokes": "echo quick\n"}],
        "task_complete": False,
    }
    server.enqueue(tool_calls=[{"name": "terminal_task", "arguments": {"query": "wait"}}], model="planner")
    server.enqueue(text=json.dumps(asks), model="executor")
    server.enqueue(text=action("waited", done=True), model="executor")
    server.enqueue(text="done", model="planner")
    started = time.monotonic()
    await turn(agent, "wait a bit")
    elapsed = time.monotonic() - started

    seen = [r for r in server.requests if r["model"] == "executor"][1]["messages"][-1]["content"]
    slept, echoed = seen.split("\n\n$ echo")
    assert "[timed out after 1 s" in slept and "timeout lowered from 600 s to 1 s" in slept
    assert "quick\n[exit 0]" in echoed and "lowered" not in echoed  # the default is under the ceiling
    assert elapsed < 4
    [episode_id] = executor_episodes(store)
    assert store.db.execute("select timeouts from episodes where id = ?", (episode_id,)).fetchone() == (1,)
    await agent.close()


async def test_retokenized_calls_are_flagged(store: MemoryStore, server: FakeOpenAI, tmp_path: Path) -> None:
    tokenizer_dir = build_tiny_model(tmp_path / "tiny", seed=1)
    agent, _ = make_agent(store, server, tmp_path, tokenizer_dir=tokenizer_dir)
    server.enqueue(tool_calls=[{"name": "terminal_task", "arguments": {"query": "say hi"}}], model="planner")
    server.enqueue(text=action("hi", done=True), model="executor")
    server.enqueue(text="hi", model="planner")
    await turn(agent, "say hi")
    [call] = store.trajectories.calls(executor_episodes(store)[0])
    assert call.retokenized and call.prompt_ids and call.completion_ids and call.completion_logprobs == []
    await agent.close()


async def test_an_episode_replays_from_its_snapshot(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path
) -> None:
    agent, _ = make_agent(store, server, tmp_path)
    verifier = 'test "$(cat count.txt)" = 2'
    # The workspace already holds data when the executor starts: the snapshot must capture it.
    server.enqueue(
        tool_calls=[{"name": "write_file", "arguments": {"path": "data.txt", "content": "x\ny\n"}}],
        model="planner",
    )
    server.enqueue(
        tool_calls=[
            {"name": "terminal_task", "arguments": {"query": "write the line count of data.txt to count.txt"}}
        ],
        model="planner",
    )
    server.enqueue(text=action("count", "wc -l < data.txt > count.txt"), model="executor")
    server.enqueue(text=action("wrote count.txt", done=True), model="executor")
    server.enqueue(text="done", model="planner")
    await turn(agent, "count it")
    [episode_id] = executor_episodes(store)
    episode = store.trajectories.executor_episode(episode_id)
    commands = [
        c.keystrokes
        for call in store.trajectories.calls(episode_id)
        for c in parse_action(call.text).commands
    ]
    assert commands == ["wc -l < data.txt > count.txt"]
    snapshot = Snapshot.load(tmp_path / "snapshots", episode.snapshot_id)
    for _ in range(2):  # the same start, the same commands, the same verifier result, every time
        async with open_sandbox("local", workspace=snapshot) as replay:
            assert (await replay.run("cat count.txt", 10)).exit_code != 0  # the snapshot predates the work
            for command in commands:
                await replay.run(command, 10)
            assert (await replay.run(verifier, 10)).exit_code == 0
    await agent.close()


async def test_secrets_in_executor_text_keep_the_episode_out_of_exports(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path
) -> None:
    from memory.trajectory_export import export_trajectories

    agent, _ = make_agent(store, server, tmp_path)
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
    server.enqueue(
        tool_calls=[{"name": "terminal_task", "arguments": {"query": f"use the key {key}"}}], model="planner"
    )
    server.enqueue(text=action("done", done=True), model="executor")
    server.enqueue(text="ok", model="planner")
    await turn(agent, "do it")
    [episode_id] = executor_episodes(store)
    assert store.trajectories.executor_episode(episode_id).contains_secret
    stored_text = json.dumps([c.messages for c in store.trajectories.calls(episode_id)])
    assert key not in stored_text and "REDACTED" in stored_text
    report = export_trajectories(store, tmp_path / "out.jsonl", format="jsonl")
    assert (report.episodes, report.excluded_secret) == (0, 1)
    assert key not in (tmp_path / "out.jsonl").read_text()
    await agent.close()


def test_parse_action_rejects_what_it_cannot_run() -> None:
    assert parse_action(
        '```json\n{"analysis": "a", "commands": [], "task_complete": true}\n```'
    ).task_complete
    for bad, reason in [
        ("no braces", "no JSON object"),
        ('{"analysis": 1}', "analysis"),
        ('{"commands": "ls"}', "commands"),
        ('{"commands": [{"keystrokes": "ls", "timeout": -1}]}', "timeout"),
        ('{"commands": []}', "at least one command"),
        # Half of a UTF-16 pair: valid JSON, but no text (the tokenizer refused the next prompt).
        ('{"commands": [{"keystrokes": "echo \\ud83d"}]}', "lone surrogate"),
        ('{"analysis": "\\udc00", "commands": [], "task_complete": true}', "lone surrogate"),
    ]:
        with pytest.raises(ActionParseError, match=reason):
            parse_action(bad)
    # Both halves make one character.
    both = parse_action('{"commands": [{"keystrokes": "echo \\ud83d\\ude00"}]}')
    assert both.commands[0].keystrokes == "echo \U0001f600"
