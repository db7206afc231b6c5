"""The agent loop end to end: real litellm against the fake OpenAI server on 127.0.0.1, a real
SQLite memory, a real sandbox. Replies are scripted with `enqueue`; assertions are on events,
on stored rows and on what the fake server received."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory import MemoryStore
from runtime.agent import Agent, AgentSettings
from runtime.compaction import CompactionSettings
from runtime.events import (
    ApprovalRequested,
    Evaluated,
    Replied,
    ReplyDelta,
    ToolReturned,
    TurnFailed,
    TurnStarted,
)
from runtime.inbound import Inbound
from runtime.models import ChatModel, ModelSettings, RetryPolicy
from runtime.sandbox import SandboxOptions
from runtime.tools import builtin_toolbox
from runtime.workspaces import Workspaces
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.anyio


def chat_model(server: FakeOpenAI, model: str = "openai/planner") -> ChatModel:
    return ChatModel(
        ModelSettings(model, api_base=server.base_url, api_key="sk-test", retry=RetryPolicy(max_retries=0))
    )


def make_agent(store: MemoryStore, server: FakeOpenAI, tmp_path: Path, **settings) -> Agent:
    workspaces = Workspaces("local", SandboxOptions(), tmp_path / "snapshots", store.set_workspace_snapshot)
    judge = chat_model(server, "openai/judge") if settings.pop("with_judge", False) else None
    return Agent(
        store,
        chat_model(server),
        builtin_toolbox(),
        workspaces,
        judge=judge,
        settings=AgentSettings(**settings),
    )


@pytest.fixture
async def agent(store: MemoryStore, server: FakeOpenAI, tmp_path: Path) -> AsyncIterator[Agent]:
    made = make_agent(store, server, tmp_path)
    yield made
    await made.close()


def said(text: str, message_id: str | None = None, **fields) -> Inbound:
    return Inbound(
        platform="cli", chat_id="c1", user_id="ana", text=text, platform_message_id=message_id, **fields
    )


async def run(agent: Agent, inbound: Inbound, approvals: list[tuple[bool, bool]] | None = None) -> list:
    events = []
    async for event in agent.turn(inbound):
        if isinstance(event, ApprovalRequested):
            approved, remember = (approvals or []).pop(0)
            event.decide(approved, remember=remember)
        events.append(event)
    await agent.drain()
    return events


def kinds(events: list) -> list[str]:
    return [type(e).__name__ for e in events if not isinstance(e, ReplyDelta)]


async def test_a_plain_turn(agent: Agent, server: FakeOpenAI, store: MemoryStore) -> None:
    server.enqueue(text=["Hello", " Ana!"])
    events = await run(agent, said("hi there"))
    assert kinds(events) == ["TurnStarted", "ModelCalled", "Replied", "Evaluated"]
    assert "".join(e.text for e in events if isinstance(e, ReplyDelta)) == "Hello Ana!"
    replied = next(e for e in events if isinstance(e, Replied))
    assert replied.text == "Hello Ana!"
    assert store.episodes.get(replied.episode_id).status == "succeeded"
    sent = server.requests[-1]
    assert sent["messages"][0]["role"] == "system" and sent["messages"][-1] == {
        "role": "user",
        "content": "hi there",
    }
    assert {t["function"]["name"] for t in sent["tools"]} == {
        "search_memory",
        "remember",
        "forget_fact",
        "profile",
        "list_files",
        "read_file",
        "write_file",
        "shell",
    }
    _, turns = store.conversations.load(store.session_id("cli:c1:"))
    assert [(t.role, t.content) for t in turns] == [("user", "hi there"), ("assistant", "Hello Ana!")]


async def test_tools_run_in_the_sandbox_and_their_results_reach_the_planner(
    agent: Agent, server: FakeOpenAI, store: MemoryStore
) -> None:
    server.enqueue(
        tool_calls=[{"name": "shell", "arguments": {"command": "echo made > note.txt && cat note.txt"}}]
    )
    server.enqueue(tool_calls=[{"name": "read_file", "arguments": {"path": "nope.txt"}}])
    server.enqueue(text="Wrote note.txt.")
    events = await run(agent, said("write a note"))
    assert kinds(events) == [
        "TurnStarted",
        "ModelCalled",
        "ToolCalled",
        "ToolReturned",
        "ModelCalled",
        "ToolCalled",
        "ToolReturned",
        "ModelCalled",
        "Replied",
        "Evaluated",
    ]
    shell, missing = [e for e in events if isinstance(e, ToolReturned)]
    assert "made" in shell.text and not shell.is_error
    assert missing.is_error and missing.text.startswith("Error:")
    second_request = server.requests[1]["messages"]
    assert second_request[-1]["role"] == "tool" and "made" in second_request[-1]["content"]
    assert second_request[-2]["tool_calls"][0]["function"]["name"] == "shell"
    _, turns = store.conversations.load(store.session_id("cli:c1:"))
    assert [t.role for t in turns] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]


async def test_bad_tool_arguments_go_back_to_the_model(agent: Agent, server: FakeOpenAI) -> None:
    server.enqueue(tool_calls=[{"name": "shell", "arguments": "{not json"}])
    server.enqueue(tool_calls=[{"name": "no_such_tool", "arguments": {}}])
    server.enqueue(text="Sorry.")
    events = await run(agent, said("do it"))
    results = [e for e in events if isinstance(e, ToolReturned)]
    assert all(r.is_error and r.text.startswith("Error:") for r in results)
    assert "no_such_tool" in results[1].text


async def test_a_risky_command_waits_for_approval(agent: Agent, server: FakeOpenAI) -> None:
    risky = "cat ~/.ssh/id_rsa"
    server.enqueue(tool_calls=[{"name": "shell", "arguments": {"command": risky}}])
    server.enqueue(text="Declined, fine.")
    events = await run(agent, said("show my key"), approvals=[(False, False)])
    asked = [e for e in events if isinstance(e, ApprovalRequested)]
    assert [a.command for a in asked] == [risky] and asked[0].reason
    [result] = [e for e in events if isinstance(e, ToolReturned)]
    assert result.is_error and "declined" in result.text
    # Approved and remembered for the session: the same rule no longer asks.
    for _ in range(2):
        server.enqueue(tool_calls=[{"name": "shell", "arguments": {"command": risky}}])
        server.enqueue(text="ok")
    first = await run(agent, said("again"), approvals=[(True, True)])
    second = await run(agent, said("and again"))
    assert sum(isinstance(e, ApprovalRequested) for e in first) == 1
    assert not any(isinstance(e, ApprovalRequested) for e in second)


async def test_an_unreachable_planner_fails_the_turn_in_one_line(
    agent: Agent, server: FakeOpenAI, store: MemoryStore
) -> None:
    server.enqueue(error=500, message="upstream exploded")
    events = await run(agent, said("hello"))
    assert kinds(events) == ["TurnStarted", "TurnFailed"]
    failed = events[-1]
    assert isinstance(failed, TurnFailed) and "\n" not in failed.error and "sk-test" not in failed.error
    assert store.episodes.get(failed.episode_id).status == "failed"


async def test_sessions_resume_and_memories_are_recalled(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path
) -> None:
    agent = make_agent(store, server, tmp_path)
    server.enqueue(text="Noted.")
    await run(agent, said("my sister moved to Lisbon"))
    server.enqueue(text="Yes.")
    await run(agent, said("thanks"))
    assert [m["content"] for m in server.requests[-1]["messages"][1:]] == [
        "my sister moved to Lisbon",
        "Noted.",
        "thanks",
    ]
    # Another chat of the same person: the past comes back through recall, not the history.
    server.enqueue(text="Lisbon.")
    await run(agent, Inbound(platform="cli", chat_id="c2", user_id="ana", text="where did my sister move?"))
    system = server.requests[-1]["messages"][0]["content"]
    assert "From earlier conversations" in system and "Lisbon" in system
    # And not for another person.
    server.enqueue(text="?")
    await run(agent, Inbound(platform="cli", chat_id="c3", user_id="bo", text="where did my sister move?"))
    assert "Lisbon" not in server.requests[-1]["messages"][0]["content"]
    await agent.close()


async def test_a_repeated_platform_message_is_stored_once(
    agent: Agent, server: FakeOpenAI, store: MemoryStore
) -> None:
    server.enqueue(text="one")
    server.enqueue(text="two")
    await run(agent, said("hello", message_id="42"))
    await run(agent, said("hello", message_id="42"))
    assert len([m for m in store.iter_messages() if m.role == "user"]) == 1


async def test_verifier_scores_the_turn_and_the_user_overrides(
    agent: Agent, server: FakeOpenAI, store: MemoryStore
) -> None:
    server.enqueue(tool_calls=[{"name": "write_file", "arguments": {"path": "done.txt", "content": "yes"}}])
    server.enqueue(text="Done.")
    events = await run(agent, said("create done.txt", verifier="test -f done.txt"))
    evaluated = events[-1]
    assert isinstance(evaluated, Evaluated)
    assert (evaluated.reward, evaluated.source) == (1.0, "verifier")
    episode = agent.feedback("cli:c1:", good=False)
    stored = store.episodes.get(episode)
    assert (stored.reward, stored.reward_source) == (0.0, "user")


async def test_the_judge_scores_tool_work(store: MemoryStore, server: FakeOpenAI, tmp_path: Path) -> None:
    agent = make_agent(store, server, tmp_path, with_judge=True)
    server.enqueue(tool_calls=[{"name": "shell", "arguments": {"command": "ls"}}], model="planner")
    server.enqueue(text="Listed.", model="planner")
    server.enqueue(text='Sure: {"score": 0.75, "reason": "listed, but said little"}', model="judge")
    events = await run(agent, said("list files"))
    evaluated = events[-1]
    assert (evaluated.reward, evaluated.source, evaluated.reason) == (
        0.75,
        "judge",
        "listed, but said little",
    )
    assert store.episodes.get(evaluated.episode_id).reward == 0.75
    # Small talk is not judged (no queued judge reply would be needed, and none is asked for).
    server.enqueue(text="Hi!", model="planner")
    assert (await run(agent, said("hi")))[-1].source is None
    await agent.close()


async def test_long_sessions_are_compacted_after_the_reply(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path
) -> None:
    agent = make_agent(
        store, server, tmp_path, compaction=CompactionSettings(threshold_chars=200, keep_turns=2)
    )
    server.enqueue(text="answer 0 " + "x" * 60)
    await run(agent, said("question 0 " + "y" * 60))  # ~140 characters: under the threshold
    server.enqueue(text="answer 1 " + "x" * 60)
    server.enqueue(text="SUMMARY: two questions about y.")  # the compaction after turn 1
    await run(agent, said("question 1 " + "y" * 60))
    assert "Summarise" in server.requests[-1]["messages"][0]["content"]
    assert "question 0" in server.requests[-1]["messages"][1]["content"]
    summary, turns = store.conversations.load(store.session_id("cli:c1:"))
    assert summary.text == "SUMMARY: two questions about y."
    assert [t.content[:10] for t in turns] == ["question 1", "answer 1 x"]
    server.enqueue(text="final")
    server.enqueue(text="SUMMARY: more.")
    await run(agent, said("one more " + "y" * 60))
    planner_request = server.requests[-2]["messages"]
    assert (
        "Earlier in this conversation (summary):\nSUMMARY: two questions about y."
        in planner_request[0]["content"]
    )
    assert "question 0" not in str(planner_request[1:])
    assert {h.content[:10] for h in store.search("question", user="cli:ana")} == {"question 0", "question 1"}
    await agent.close()


async def test_a_cancelled_turn_is_abandoned(agent: Agent, server: FakeOpenAI, store: MemoryStore) -> None:
    server.enqueue(text="slow", delay=5)
    started: list[TurnStarted] = []

    async def consume() -> None:
        async for event in agent.turn(said("take your time")):
            if isinstance(event, TurnStarted):
                started.append(event)

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert store.episodes.get(started[0].episode_id).status == "abandoned"
