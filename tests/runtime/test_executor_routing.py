"""Routing terminal work per kind of task by measured competence (runtime/executor/routing.py):
the real store's measurements, the real agent loop over the fake OpenAI server, and every
decision stored with its reason, version and episode."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory import MemoryStore
from runtime.executor import PlannerBackend, Router, RoutingSettings
from tests.fakes.openai_server import FakeOpenAI
from tests.runtime.test_executor_loop import action, executor_episodes, make_agent, model, turn

pytestmark = pytest.mark.anyio

COPY = "Copy the file list.txt to names.txt."  # kind A
SORT = "Write the lines of menu.txt in sorted order to out.txt."  # kind B


def planner_did(store: MemoryStore, kind: str, rewards: list[float]) -> None:
    """Live episodes the planner route handled on `kind`, scored."""
    for reward in rewards:
        episode = store.trajectories.start_executor_episode("earlier work")
        store.episodes.record_reward(episode, reward, "user")
        store.routing.record_decision(kind=kind, route="planner", reason="earlier", episode_id=episode)


async def test_the_executor_takes_a_kind_it_matches_the_planner_on_and_the_planner_keeps_the_rest(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path
) -> None:
    router = Router(store, RoutingSettings(threshold=0.6, margin=0.05, exploration=0.0))
    _, terminal = make_agent(
        store, server, tmp_path, model=PlannerBackend(model(server, "small")), router=router
    )
    copy, sort = router.kinds.kind_of(COPY), router.kinds.kind_of(SORT)
    assert copy != sort
    route = terminal.route(COPY)
    assert (
        route.backend is terminal.planner and route.reason == "base has no held-out result on this kind yet"
    )

    store.routing.record_competence("base", {copy: (0.7, 10), sort: (0.5, 10)})
    route = terminal.route("Copy the file books.txt to todo.txt.")  # kind A; the planner unmeasured on it
    assert route.backend is terminal.model and route.reason.startswith(
        "base held-out success 0.70 on 10 tasks >= 0.60"
    )
    planner_did(store, copy, [1.0, 0.5])  # planner 0.75 on A: 0.70 >= 0.75 - 0.05
    assert terminal.route(COPY).backend is terminal.model
    assert "0.70 on 10 tasks >= 0.70, planner 0.75 - margin 0.05" in terminal.route(COPY).reason
    planner_did(store, sort, [1.0, 1.0, 0.7])  # planner 0.90 on B: 0.50 < 0.85
    route = terminal.route(SORT)
    assert (
        route.backend is terminal.planner
        and "0.50 on 10 tasks < 0.85, planner 0.90 - margin 0.05" in route.reason
    )


async def test_each_terminal_task_records_its_decision_and_episode(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path
) -> None:
    router = Router(store, RoutingSettings(exploration=0.0))
    agent, _ = make_agent(
        store, server, tmp_path, model=PlannerBackend(model(server, "small")), router=router
    )
    store.routing.record_competence("base", {router.kinds.kind_of(COPY): (0.9, 8)})
    for query in (COPY, SORT):
        server.enqueue(tool_calls=[{"name": "terminal_task", "arguments": {"query": query}}], model="planner")
    server.enqueue(text=action("copied", "cp list.txt names.txt", done=True), model="small")
    server.enqueue(text=action("sorted", "sort menu.txt > out.txt", done=True), model="executor")
    server.enqueue(text="Done.", model="planner")
    await turn(agent, "copy the list, then sort the menu")
    first, second = executor_episodes(store)
    decisions = store.routing.decisions()
    assert [(d.route, d.version, d.episode_id, d.kind) for d in decisions] == [
        ("executor", "base", first, router.kinds.kind_of(COPY)),
        ("planner", None, second, router.kinds.kind_of(SORT)),
    ]
    assert decisions[0].reason.startswith("base held-out success 0.90")
    assert decisions[1].reason == "base has no held-out result on this kind yet"
    assert all(d.session_id is not None for d in decisions)
    assert [c.model for c in store.trajectories.calls(first)] == [
        "planner:openai/small"
    ]  # the model slot ran it
    await agent.close()


def test_the_planner_keeps_an_exploration_share_drawn_deterministically(tmp_path: Path) -> None:
    def shares(path: Path, seed: int) -> list[str]:
        with MemoryStore.open(path) as store:
            router = Router(store, RoutingSettings(exploration=0.2, seed=seed))
            store.routing.record_competence("v3", {router.kinds.kind_of(COPY): (0.95, 20)})
            routes = []
            for _ in range(400):
                decision = router.decide(COPY, "v3")
                router.record(decision, "v3", None, None)
                routes.append(decision.route)
            explored = [d for d in store.routing.decisions() if d.route == "planner"]
            assert all(
                d.reason.startswith("exploration (20% share): v3 held-out success 0.95") for d in explored
            )
            return routes

    routes = shares(tmp_path / "a.db", seed=7)
    assert 0.15 <= routes.count("planner") / len(routes) <= 0.25
    assert shares(tmp_path / "b.db", seed=7) == routes  # pinned by the seed
    assert shares(tmp_path / "c.db", seed=8) != routes
