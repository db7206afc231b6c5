"""The direct route: a person's message of a kind the executor model has proven itself on goes to
it without a planner call; the planner takes over when the run does not complete, and keeps
every message that asks for more than a known kind of task.

Real parts: the agent, the executor loop in a real sandbox, the router over a real SQLite store,
the executor model and the planner over real HTTP to the fake OpenAI server (one queue: the
order of the scripted replies is the order of the calls, and each request says its model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory import MemoryStore
from runtime.agent import Agent
from runtime.events import Replied, ToolCalled, ToolReturned
from runtime.executor import PlannerBackend, Router, RoutingSettings, TaskKinds
from runtime.executor.loop import ExecutorSettings
from runtime.executor.recording import MemoryRecorder
from runtime.executor.terminal import TerminalExecutor
from runtime.inbound import Inbound
from runtime.models import ChatModel, ModelSettings, RetryPolicy
from runtime.sandbox import SandboxOptions
from runtime.tools import builtin_toolbox
from runtime.workspaces import Workspaces
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.anyio

KNOWN = "Copy the file notes.txt to pets.txt."  # the kind's first example


def model(server: FakeOpenAI, name: str) -> ChatModel:
    return ChatModel(
        ModelSettings(
            f"openai/{name}", api_base=server.base_url, api_key="sk-test", retry=RetryPolicy(max_retries=0)
        )
    )


def action(analysis: str, *commands: str, done: bool) -> str:
    return json.dumps(
        {
            "analysis": analysis,
            "commands": [{"keystrokes": c + "\n", "timeout": 10} for c in commands],
            "task_complete": done,
        }
    )


def make_agent(store: MemoryStore, server: FakeOpenAI, tmp_path: Path, competence: float) -> Agent:
    """An agent whose executor model ("executor" on the fake) has `competence` on KNOWN's kind."""
    kind = TaskKinds(store).kind_of(KNOWN)
    store.routing.record_competence("base", {kind: (competence, 8)})
    snapshots = tmp_path / "snapshots"
    terminal = TerminalExecutor(
        PlannerBackend(model(server, "planner")),
        ExecutorSettings(max_turns=2),
        model=PlannerBackend(model(server, "executor")),  # an executor model served over HTTP
        router=Router(store, RoutingSettings(exploration=0.0)),
        recorder=MemoryRecorder(store, snapshots),
    )
    return Agent(
        store,
        model(server, "planner"),
        builtin_toolbox(executor=True),
        Workspaces("local", SandboxOptions(), snapshots, store.set_workspace_snapshot),
        terminal=terminal,
        direct=terminal.run_direct,
    )


def inbound(text: str) -> Inbound:
    return Inbound(platform="cli", chat_id="c", user_id="ana", text=text)


async def turn(agent: Agent, text: str) -> list:
    """The test's one turn, its after-reply work, then the agent closed: its sandbox put away."""
    events = [event async for event in agent.turn(inbound(text))]
    await agent.close()
    return events


def models_called(server: FakeOpenAI) -> list[str]:
    return [request["model"] for request in server.requests]


async def test_a_known_kind_is_answered_by_the_executor_without_a_planner_call(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path
) -> None:
    agent = make_agent(store, server, tmp_path, competence=0.9)
    server.enqueue(text=action("Copied.", "printf 'cat\\n' > todo.txt", "cp todo.txt list.txt", done=True))
    events = await turn(agent, "Copy the file todo.txt to list.txt.")

    assert models_called(server) == ["executor"]  # the planner was never called
    [replied] = [e for e in events if isinstance(e, Replied)]
    assert replied.text.startswith("Copied.") and "$ cp todo.txt list.txt" in replied.text
    [called] = [e for e in events if isinstance(e, ToolCalled)]
    assert called.name == "terminal_task" and json.loads(called.arguments) == {
        "query": "Copy the file todo.txt to list.txt."
    }
    # Stored as the planner route stores it: the call, the executor's report, then the reply.
    session_id = store.session_id(inbound("").session_key)
    assert session_id is not None
    roles = [m.role for m in store.recent_messages(session_id, 10)]
    assert roles == ["user", "assistant", "tool", "assistant"]
    [decision] = store.routing.decisions()
    assert decision.route == "executor" and decision.version == "base"
    assert decision.reason.startswith("direct route: base held-out success 0.90")
    assert decision.episode_id is not None


async def test_the_planner_takes_over_when_the_executor_does_not_finish(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path
) -> None:
    agent = make_agent(store, server, tmp_path, competence=0.9)
    server.enqueue(text=action("Trying.", "false", done=False))
    server.enqueue(text=action("Still trying.", "false", done=False))  # max_turns=2: out of turns
    server.enqueue(text="I copied it myself.")  # the planner, with the attempt in its context
    events = await turn(agent, "Copy the file todo.txt to list.txt.")

    assert models_called(server) == ["executor", "executor", "planner"]
    [replied] = [e for e in events if isinstance(e, Replied)]
    assert replied.text == "I copied it myself."
    [returned] = [e for e in events if isinstance(e, ToolReturned)]
    assert returned.is_error
    planner_saw = server.requests[-1]["messages"]
    assert planner_saw[-1]["role"] == "tool" and "without finishing" in planner_saw[-1]["content"]
    assert planner_saw[-2]["tool_calls"][0]["function"]["name"] == "terminal_task"


@pytest.mark.parametrize(
    ("text", "competence"),
    [
        ("Copy the file todo.txt to list.txt.", 0.3),  # the executor is not good enough at it
        ("Copy the file todo.txt to list.txt, then tell me what a good name for a cat is.", 0.9),
        ("What's on my list for today?", 0.9),  # no known kind at all
    ],
)
async def test_the_planner_keeps_what_the_executor_has_not_proven_or_what_asks_for_more(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path, text: str, competence: float
) -> None:
    agent = make_agent(store, server, tmp_path, competence=competence)
    server.enqueue(text="Here you go.")
    events = await turn(agent, text)

    assert models_called(server) == ["planner"]
    assert [e.text for e in events if isinstance(e, Replied)] == ["Here you go."]
    assert store.routing.decisions() == []  # nothing was routed: the planner did not delegate
    assert len(TaskKinds(store).known()) == 1  # looking a message up stores no kind
