"""The skill index: search over name, description and body; uses and outcomes per skill."""

from __future__ import annotations

import pytest

from memory import SUCCESS_REWARD, IndexedSkill, MemoryStore


def skill(
    name: str, description: str, body: str = "", trust: str = "trusted", pinned: bool = False
) -> IndexedSkill:
    return IndexedSkill(name, description, body, trust, pinned, 1, len(body), f"hash-{name}-{body}")


@pytest.fixture
def indexed(store: MemoryStore) -> MemoryStore:
    store.skills.upsert(
        [
            skill(
                "docker-prune",
                "Reclaim disk space from Docker images and build cache.",
                "docker system prune",
            ),
            skill(
                "git-undo-commit", "Undo the last git commit and keep the changes.", "git reset --soft HEAD~1"
            ),
            skill(
                "postgres-backup", "Back up a PostgreSQL database with pg_dump.", "pg_dump -Fc db > db.dump"
            ),
            skill("csv-sort", "Sort a CSV file by a column.", "sort -t, -k2", trust="untrusted"),
            skill("house-style", "How this team formats reports.", "", pinned=True),
        ]
    )
    return store


def test_search_ranks_by_request_words_and_hides_untrusted(indexed: MemoryStore) -> None:
    names = [m.name for m in indexed.skills.search("my disk is full of docker images, how do I free space?")]
    assert names[0] == "docker-prune"
    assert indexed.skills.search("I committed too early, undo it")[0].name == "git-undo-commit"
    assert indexed.skills.search("sort this csv by the second column") == []
    untrusted = indexed.skills.search("sort this csv by the second column", trusted_only=False)
    assert [m.name for m in untrusted] == ["csv-sort"]
    assert [m.name for m in indexed.skills.pinned()] == ["house-style"]


def test_recent_turns_count_for_less_than_the_request(indexed: MemoryStore) -> None:
    found = indexed.skills.search("now back up the database", context="we pruned docker images earlier")
    assert [m.name for m in found][:2] == ["postgres-backup", "docker-prune"]


def test_questions_and_hostile_text_never_break_the_query(indexed: MemoryStore) -> None:
    for text in ("what?", "AND OR NEAR(", '"unbalanced', "", "?" * 50, "🙂 docker"):
        indexed.skills.search(text)


def test_upsert_replaces_and_remove_leaves_the_index(indexed: MemoryStore) -> None:
    indexed.skills.upsert([skill("docker-prune", "Clean up Kubernetes pods.", "kubectl delete pod")])
    assert indexed.skills.search("images build cache") == []
    assert [m.name for m in indexed.skills.search("kubernetes pods")] == ["docker-prune"]
    assert indexed.skills.remove(["docker-prune", "nope"]) == 1
    assert indexed.skills.search("kubernetes pods") == []
    assert indexed.skills.count() == 4


def rated_turn(store: MemoryStore, reward: float | None, *, viewed: list[str], offered: list[str]) -> int:
    user = store.ensure_user("ana")
    session = store.ensure_session("s", user_id=user)
    episode = store.episodes.start(session, user, "a task")
    store.skills.record_offered(episode, offered)
    for name in viewed:
        store.skills.record_viewed(episode, name)
    if reward is not None:
        store.episodes.record_reward(episode, reward, "judge")
    return episode


def test_outcomes_compare_turns_with_the_skill_and_comparable_turns_without(store: MemoryStore) -> None:
    for reward in (1.0, 1.0, 0.0, 0.5, None):  # 0.5 is "partly done": not a success
        rated_turn(store, reward, viewed=["a"], offered=["a", "b"])
    for reward in (1.0, 1.0, 1.0, 1.0, 0.0, 1.0):  # offered "a", did not open it
        rated_turn(store, reward, viewed=[], offered=["a"])
    stats = store.skills.stats("a")
    assert (stats.uses, stats.rewarded, stats.success_with) == (5, 4, 0.5)
    assert (stats.comparable, stats.baseline) == (6, "offered-not-viewed")
    assert stats.success_without == pytest.approx(5 / 6)
    assert SUCCESS_REWARD > 0.5


def test_few_comparable_turns_fall_back_to_all_turns(store: MemoryStore) -> None:
    rated_turn(store, 1.0, viewed=["a"], offered=["a"])
    rated_turn(store, 0.0, viewed=[], offered=[])
    rated_turn(store, 1.0, viewed=["b"], offered=["b"])
    stats = store.skills.stats("a")
    assert (stats.comparable, stats.success_without, stats.baseline) == (2, 0.5, "all-turns")
    later = store.skills.stats("a", since=10**12)
    assert (later.uses, later.success_with, later.success_without) == (0, None, 0.5)


def test_viewed_and_health_records(store: MemoryStore) -> None:
    episode = rated_turn(store, 0.0, viewed=["a"], offered=["a", "b"])
    assert store.skills.viewed_in(episode) == ["a"]
    assert store.skills.offered_in(episode) == ["a", "b"]
    assert store.skills.failing_requests("a") == [("a task", "")]
    store.skills.set_health("a", "flagged", "20% vs 80%")
    store.skills.set_health("a", "revised", "version 2", since=5.0)
    health = store.skills.health("a")
    assert health is not None and (health.state, health.since, health.note) == ("revised", 5.0, "version 2")
    store.skills.clear_health("a")
    assert store.skills.health("a") is None
