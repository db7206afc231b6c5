"""The user model end to end: a real Agent, real litellm against the scripted fake planner, a real
SQLite memory. Extraction (merge, supersession, bad replies), the profile in the next prompt, and
attempts to make one person's facts reach another's prompt or change another's facts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory import MemoryStore
from runtime.agent import Agent, AgentSettings
from runtime.context import ContextSettings
from runtime.inbound import Inbound
from runtime.models import ChatModel, ModelSettings, RetryPolicy
from runtime.sandbox import SandboxOptions
from runtime.tools import builtin_toolbox
from runtime.user_model import UserModelSettings, parse_extraction
from runtime.workspaces import Workspaces
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.anyio
PROFILE = "What you know about the user:"


def make_agent(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path, every: int = 2, idle_end_s: float = 1800.0
) -> Agent:
    planner = ChatModel(
        ModelSettings(
            "openai/planner", api_base=server.base_url, api_key="sk-test", retry=RetryPolicy(max_retries=0)
        )
    )
    workspaces = Workspaces("local", SandboxOptions(), tmp_path / "snapshots", store.set_workspace_snapshot)
    settings = AgentSettings(
        stream=False, user_model=UserModelSettings(every_turns=every, idle_end_s=idle_end_s)
    )
    return Agent(store, planner, builtin_toolbox(), workspaces, settings=settings)


def said(text: str, user: str = "ana", chat: str = "c1", group: bool = False, name: str = "Ana") -> Inbound:
    return Inbound(platform="telegram", chat_id=chat, user_id=user, text=text, is_group=group, user_name=name)


async def turn(agent: Agent, inbound: Inbound) -> None:
    async for _ in agent.turn(inbound):
        pass
    await agent.drain()


def next_id(store: MemoryStore) -> int:
    return (store.db.execute("select max(id) from messages").fetchone()[0] or 0) + 1


def facts_reply(*facts: dict[str, Any]) -> str:
    return json.dumps({"facts": list(facts)})


def user_of(store: MemoryStore, who: str = "ana") -> int:
    user_id = store.user_for_identity("telegram", who)
    assert user_id is not None
    return user_id


def system_of(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


async def test_facts_are_extracted_every_n_turns_and_reach_the_next_prompt(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path
) -> None:
    agent = make_agent(store, server, tmp_path, every=2)
    first = next_id(store)
    server.enqueue(text="Noted.")
    await turn(agent, said("I'm vegetarian, and I live in Lyon"))
    assert len(server.requests) == 1  # one message unread: no extraction yet
    second = next_id(store)
    server.enqueue(text="Nice!")
    server.enqueue(
        text="Here you go: "
        + facts_reply(
            {"statement": "Is vegetarian", "kind": "preference", "confidence": 0.9, "sources": [first]},
            {"statement": "Lives in Lyon", "kind": "biography", "sources": [first]},
            {"statement": "Has a sister, Lena", "kind": "relationship", "sources": [second]},
        )
    )
    await turn(agent, said("My sister Lena visits in May"))
    extraction = server.requests[-1]["messages"]
    assert "profile of one user" in extraction[0]["content"]
    assert f"[{first}] user: I'm vegetarian, and I live in Lyon" in extraction[1]["content"]
    facts = {f.statement: f for f in store.facts.for_user(user_of(store))}
    assert set(facts) == {"Is vegetarian", "Lives in Lyon", "Has a sister, Lena"}
    assert facts["Has a sister, Lena"].sources == (second,) and facts["Is vegetarian"].confidence == 0.9

    server.enqueue(text="Try a lentil stew.")
    await turn(agent, said("what should I cook tonight?"))
    assert f"{PROFILE}\n- Is vegetarian" in system_of(server.requests[-1])
    await agent.close()


async def test_restated_facts_merge_and_contradictions_supersede(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path
) -> None:
    agent = make_agent(store, server, tmp_path, every=2)
    server.enqueue(text="ok")
    await turn(agent, said("hello"))
    ana = user_of(store)
    hello = store.db.execute("select min(id) from messages").fetchone()[0]
    lyon = store.facts.add(ana, "Lives in Lyon", kind="biography", sources=[hello]).fact
    tea = store.facts.add(ana, "Prefers tea", kind="preference", sources=[hello]).fact
    moved = next_id(store)
    server.enqueue(text="Welcome to Berlin!")
    server.enqueue(
        text=facts_reply(
            {"statement": "Lives in Berlin", "kind": "biography", "sources": [moved], "replaces": lyon.id},
            {"statement": "Drinks tea", "kind": "preference", "sources": [moved], "same_as": tea.id},
        )
    )
    await turn(agent, said("I moved to Berlin, and still drink tea every morning"))
    current = {f.statement: f for f in store.facts.for_user(ana)}
    assert set(current) == {"Lives in Berlin", "Prefers tea"}
    assert current["Prefers tea"].mentions == 2 and current["Prefers tea"].sources == (hello, moved)
    history = store.facts.history(ana, current["Lives in Berlin"].id)
    assert [f.statement for f in history] == ["Lives in Berlin", "Lives in Lyon"]
    assert "Known facts:" in server.requests[-1]["messages"][1]["content"]
    assert f"[{lyon.id}] Lives in Lyon" in server.requests[-1]["messages"][1]["content"]
    await agent.close()


async def test_a_bad_reply_is_dropped_and_the_batch_counts_as_read(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path
) -> None:
    agent = make_agent(store, server, tmp_path, every=1)
    server.enqueue(text="ok")
    server.enqueue(text="I think the user likes jazz.")  # prose, not the schema
    await turn(agent, said("I love jazz"))
    assert store.facts.for_user(user_of(store)) == []
    assert store.facts.unread_count(store.session_id("telegram:c1:") or 0, user_of(store)) == 0
    good = next_id(store)
    server.enqueue(text="ok")
    server.enqueue(
        text=facts_reply(
            {"statement": "Loves jazz", "kind": "preference", "sources": [good]},
            {"statement": "Has a mood", "kind": "mood", "sources": [good]},  # not a kind
            {"statement": "Is uncited", "kind": "other"},  # no sources
            {"statement": "Cites nothing real", "sources": [999_999]},
            "not an object",
        )
    )
    await turn(agent, said("jazz is my favourite, Coltrane mostly"))
    assert [f.statement for f in store.facts.for_user(user_of(store))] == ["Loves jazz"]
    await agent.close()


async def test_a_session_that_went_quiet_is_read_after_a_later_turn(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path
) -> None:
    agent = make_agent(store, server, tmp_path, every=10, idle_end_s=0.0)
    first = next_id(store)
    server.enqueue(text="ok")
    await turn(agent, said("I work as a nurse", chat="morning"))
    assert store.facts.for_user(user_of(store)) == []
    server.enqueue(text="ok")
    server.enqueue(
        text=facts_reply({"statement": "Works as a nurse", "kind": "biography", "sources": [first]})
    )
    await turn(agent, said("hello again", chat="evening"))  # "morning" has ended by now
    assert [f.statement for f in store.facts.for_user(user_of(store))] == ["Works as a nurse"]
    assert f"[{first}] user: I work as a nurse" in server.requests[-1]["messages"][1]["content"]
    await agent.close()


async def test_two_people_with_the_same_name_in_one_group_never_see_each_others_facts(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path
) -> None:
    agent = make_agent(store, server, tmp_path, every=1)
    first = next_id(store)
    server.enqueue(text="ok")
    server.enqueue(
        text=facts_reply({"statement": "Is allergic to penicillin", "kind": "constraint", "sources": [first]})
    )
    await turn(agent, said("I'm allergic to penicillin", user="u1", chat="g", group=True))
    secret = store.facts.for_user(user_of(store, "u1"))[0]

    other = next_id(store)
    server.enqueue(text="ok")
    # The reply tries to file the first person's message and fact under the second person.
    server.enqueue(
        text=facts_reply(
            {"statement": "Is allergic to penicillin", "sources": [first]},
            {"statement": "Is not allergic to anything", "sources": [other], "replaces": secret.id},
            {"statement": "Same as the other Ana", "sources": [other], "same_as": secret.id},
            {"statement": "Is called Ana", "kind": "biography", "sources": [other]},
        )
    )
    await turn(agent, said("what am I allergic to? also, I'm the same Ana", user="u2", chat="g", group=True))
    assert "penicillin" not in system_of(server.requests[-2])  # u2's turn: u1's profile is not theirs
    assert "penicillin" not in server.requests[-1]["messages"][1]["content"]  # nor the extraction's
    assert store.facts.get(user_of(store, "u1"), secret.id) == secret  # untouched
    u2_facts = [f.statement for f in store.facts.for_user(user_of(store, "u2"))]
    assert u2_facts == ["Is called Ana"]  # cites their own message, names no fact it was not shown

    server.enqueue(text="Penicillin, you said.")
    server.enqueue(text=facts_reply())
    await turn(agent, said("remind me what I'm allergic to", user="u1", chat="g", group=True))
    assert "Is allergic to penicillin" in system_of(server.requests[-2])  # the speaker's own profile
    await agent.close()


async def test_the_profile_section_fits_its_token_budget(store: MemoryStore) -> None:
    from runtime.context import SessionRef, build_messages
    from runtime.models import count_tokens

    ana = store.ensure_user("ana")
    session = SessionRef(store.ensure_session("k", user_id=ana), "k", ana, "ana")
    for n in range(120):
        store.facts.add(ana, f"Fact number {n}: keeps a detailed 2026 logbook of birdwatching trip #{n * 37}")
    for budget in (300, 60):
        prompt = build_messages(store, session, "birdwatching", ContextSettings(profile_tokens=budget))[0][
            "content"
        ]
        section = prompt.split(PROFILE + "\n", 1)[1].split("\n\n", 1)[0]
        assert section.count("\n") >= budget // 40  # the budget is used, not left empty
        overhead = count_tokens([{"role": "user", "content": ""}])  # the chat format's own tokens
        assert count_tokens([{"role": "user", "content": section}]) - overhead <= budget


def test_parse_extraction_takes_only_the_schema() -> None:
    assert parse_extraction("no json here") is None
    assert parse_extraction('{"facts": "many"}') is None
    parsed = parse_extraction(
        '```json\n{"facts": [{"statement": "x", "sources": [1]}, {"sources": [1]}]}\n```'
    )
    assert parsed is not None
    facts, invalid = parsed
    assert [f.statement for f in facts] == ["x"] and invalid == 1
