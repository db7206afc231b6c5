"""memory.routing (`store.routing`) on a real database: kinds, competence by version and kind,
the planner's measured success (an executor episode's own reward, else its chat turn's), and
decisions with their daily summary."""

from __future__ import annotations

import time

import pytest

from memory import MemoryStore

KIND = "copy the file <path> to <path>"


def planner_episode(
    store: MemoryStore, *, reward: float | None, on_parent: bool = False, split: str = "live"
) -> int:
    """A terminal task the planner did, scored on the executor episode or on its chat turn."""
    session = store.ensure_session("s")
    user = store.ensure_user("ana")
    turn = store.episodes.start(session, user, "copy it")
    episode = store.trajectories.start_executor_episode("copy it", split=split, parent_episode_id=turn)
    if reward is not None:
        store.episodes.record_reward(turn if on_parent else episode, reward, "user")
    store.routing.record_decision(
        kind=KIND, route="planner", reason="test", episode_id=episode, session_id=session
    )
    return episode


def test_kinds_keep_their_first_example_and_order(store: MemoryStore) -> None:
    first = store.routing.add_kind(KIND, "Copy the file a.txt to b.txt.")
    again = store.routing.add_kind(KIND, "Copy the file c.txt to d.txt.")
    other = store.routing.add_kind("sort <path>", "sort x.txt")
    assert first == again and other > first
    assert store.routing.kinds() == [
        (first, KIND, "Copy the file a.txt to b.txt."),
        (other, "sort <path>", "sort x.txt"),
    ]
    assert store.routing.kinds(after_id=first) == [(other, "sort <path>", "sort x.txt")]


def test_competence_is_the_newest_measurement_of_a_version_on_a_kind(store: MemoryStore) -> None:
    assert store.routing.competence("v1", KIND) is None
    store.routing.record_competence("v1", {KIND: (0.5, 8), "sort <path>": (1.0, 4)})
    store.routing.record_competence("v1", {KIND: (0.75, 12)}, source="bench")
    store.routing.record_competence("v2", {KIND: (0.25, 8)})
    newest = store.routing.competence("v1", KIND)
    assert newest is not None and (newest.success, newest.tasks, newest.source) == (0.75, 12, "bench")
    assert store.routing.competence("v2", KIND).success == 0.25  # type: ignore[union-attr]
    assert store.routing.competence("v2", "sort <path>") is None
    with pytest.raises(ValueError, match="between 0 and 1"):
        store.routing.record_competence("v1", {KIND: (1.5, 3)})


def test_planner_success_reads_the_episode_reward_else_its_turns(store: MemoryStore) -> None:
    assert store.routing.planner_success(KIND) is None
    planner_episode(store, reward=1.0)
    planner_episode(store, reward=0.0, on_parent=True)  # a user's thumbs down on the turn
    planner_episode(store, reward=None)  # unscored: not counted
    planner_episode(store, reward=0.0, split="heldout")  # a replay, not live work: not counted
    store.routing.record_decision(kind=KIND, route="executor", reason="test", version="v1")
    assert store.routing.planner_success(KIND) == pytest.approx(0.5)
    assert store.routing.planner_success("sort <path>") is None


def test_planner_success_takes_the_higher_ranked_reward_as_the_learner_does(store: MemoryStore) -> None:
    """A verifier passed the episode, the user turned the turn down: the user's word counts, here
    and in the learner's harvest (one rule: learner/tasks/episodes.py episode_reward)."""
    session, user = store.ensure_session("s"), store.ensure_user("ana")

    def planned() -> tuple[int, int]:  # (the chat turn, the executor episode the planner did)
        turn = store.episodes.start(session, user, "copy it")
        episode = store.trajectories.start_executor_episode("copy it", split="live", parent_episode_id=turn)
        store.routing.record_decision(
            kind=KIND, route="planner", reason="test", episode_id=episode, session_id=session
        )
        return turn, episode

    turn, episode = planned()
    store.episodes.record_reward(episode, 1.0, "verifier")
    assert store.routing.planner_success(KIND) == pytest.approx(1.0)
    store.episodes.record_reward(turn, 0.0, "user")
    assert store.routing.planner_success(KIND) == pytest.approx(0.0)
    turn, episode = planned()  # the judge on the turn ranks below the verifier on the episode
    store.episodes.record_reward(turn, 0.0, "judge")
    store.episodes.record_reward(episode, 1.0, "verifier")
    assert store.routing.planner_success(KIND) == pytest.approx(0.5)


def test_decisions_and_their_summary_by_day_and_route(store: MemoryStore) -> None:
    started = time.time()
    planner_episode(store, reward=1.0)
    executor = store.trajectories.start_executor_episode("copy it")
    store.episodes.record_reward(executor, 0.5, "verifier")
    store.routing.record_decision(
        kind=KIND, route="executor", reason="measured", version="v2", episode_id=executor
    )
    with pytest.raises(ValueError, match="route must be one of"):
        store.routing.record_decision(kind=KIND, route="shell", reason="no")
    decisions = store.routing.decisions(since=started)
    assert [(d.route, d.version, d.episode_id is not None) for d in decisions] == [
        ("planner", None, True), ("executor", "v2", True),
    ]  # fmt: skip
    assert store.routing.decision_count(KIND) == 2
    [executed, planner] = sorted(store.routing.summary(since=started), key=lambda day: day.route)
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert (executed.day, executed.route, executed.decisions, executed.scored, executed.mean_reward) == (
        today, "executor", 1, 1, 0.5,
    )  # fmt: skip
    assert (planner.route, planner.decisions, planner.mean_reward) == ("planner", 1, 1.0)
