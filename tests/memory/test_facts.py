"""Facts (memory/facts.py): merge, supersede with history, forget, the profile within a budget,
and one user's facts never reachable through another's id."""

from __future__ import annotations

import pytest

from memory import MemoryStore, UnknownRecordError
from memory.facts import estimate_tokens


def said(store: MemoryStore, handle: str, text: str) -> int:
    user_id = store.ensure_user(handle)
    session_id = store.ensure_session(f"s-{handle}", user_id=user_id)
    return store.add_message(session_id=session_id, user_id=user_id, role="user", content=text)


def test_a_restated_fact_is_merged_not_duplicated(store: MemoryStore) -> None:
    first = said(store, "ana", "I'm allergic to shellfish")
    again = said(store, "ana", "remember, shellfish allergy!")
    ana = store.user_id("ana")
    assert ana is not None
    added = store.facts.add(ana, "Allergic to shellfish", kind="constraint", sources=[first], confidence=0.7)
    merged = store.facts.add(ana, "allergic to  shellfish.", sources=[again], confidence=0.9)
    assert (added.action, merged.action) == ("added", "merged")
    [fact] = store.facts.for_user(ana)
    assert (fact.id, fact.mentions, fact.confidence, fact.sources) == (added.fact.id, 2, 0.9, (first, again))
    assert fact.kind == "constraint" and fact.statement == "Allergic to shellfish"


def test_a_contradiction_supersedes_and_keeps_the_history(store: MemoryStore) -> None:
    paris = said(store, "ana", "I live in Paris")
    berlin = said(store, "ana", "I moved to Berlin last month")
    ana = store.user_id("ana")
    assert ana is not None
    old = store.facts.add(ana, "Lives in Paris", kind="biography", sources=[paris]).fact
    new = store.facts.supersede(ana, old.id, "Lives in Berlin", sources=[berlin])
    assert (new.action, new.replaced, new.fact.kind, new.fact.supersedes) == (
        "superseded",
        old.id,
        "biography",
        old.id,
    )
    assert [f.statement for f in store.facts.for_user(ana)] == ["Lives in Berlin"]
    assert [f.statement for f in store.facts.history(ana, new.fact.id)] == [
        "Lives in Berlin",
        "Lives in Paris",
    ]
    assert store.facts.get(ana, old.id).superseded_by == new.fact.id
    assert store.facts.search(ana, "where does she live") == [store.facts.get(ana, new.fact.id)]
    # superseding the old version again replaces the current one, not the history
    third = store.facts.supersede(ana, old.id, "Lives in Rome")
    assert third.replaced == new.fact.id


def test_forget_removes_the_fact_its_history_and_its_index_entry(store: MemoryStore) -> None:
    ana = store.ensure_user("ana")
    old = store.facts.add(ana, "Works at Globex").fact
    new = store.facts.supersede(ana, old.id, "Works at Initech").fact
    keep = store.facts.add(ana, "Plays the cello", kind="preference").fact
    assert sorted(store.facts.forget(ana, new.id)) == sorted([new.id, old.id])
    assert store.facts.for_user(ana, include_history=True) == [keep]
    assert store.facts.search(ana, "Initech Globex works") == []
    hits = store.db.execute(
        "select rowid from facts_fts where facts_fts match 'initech OR globex'"
    ).fetchall()
    assert hits == []


def test_one_users_fact_is_unknown_to_another(store: MemoryStore) -> None:
    ana, bo = store.ensure_user("ana"), store.ensure_user("bo")
    secret = store.facts.add(ana, "Has a secret password hint: blue heron").fact
    bo_message = said(store, "bo", "my dog is called Rex")
    for attempt in (
        lambda: store.facts.get(bo, secret.id),
        lambda: store.facts.merge(bo, secret.id),
        lambda: store.facts.supersede(bo, secret.id, "nothing"),
        lambda: store.facts.forget(bo, secret.id),
    ):
        with pytest.raises(UnknownRecordError):
            attempt()
    with pytest.raises(ValueError, match="same user"):
        store.facts.add(ana, "Has a dog called Rex", sources=[bo_message])
    assert store.facts.search(bo, "secret password hint blue heron") == []
    assert store.facts.relevant(bo, "password heron", 300) == []
    assert store.facts.get(ana, secret.id).statement.endswith("blue heron")


def test_bad_facts_are_refused(store: MemoryStore) -> None:
    ana = store.ensure_user("ana")
    for statement, kind, confidence in (
        ("", "other", 0.5),
        ("x", "mood", 0.5),
        ("x", "other", 1.5),
        ("x" * 501, "other", 0.5),
    ):
        with pytest.raises(ValueError):
            store.facts.add(ana, statement, kind=kind, confidence=confidence)
    assert store.facts.for_user(ana) == []


def test_the_profile_is_relevant_facts_then_stable_ones_within_the_budget(store: MemoryStore) -> None:
    ana = store.ensure_user("ana")
    for n in range(40):
        store.facts.add(ana, f"Collects vintage stamp series number {n} from the archive", kind="other")
    cello = store.facts.add(ana, "Plays the cello in an amateur orchestra", kind="preference").fact
    sister = store.facts.add(ana, "Has a sister named Lena", kind="relationship").fact
    for _ in range(3):
        store.facts.add(ana, "Has a sister named Lena")
    profile = store.facts.relevant(ana, "any concerts for my cello this weekend?", 40)
    assert profile[0] == store.facts.get(ana, cello.id)  # found by the index for this request
    assert profile[1].id == sister.id  # then the most stable: a relationship, stated four times
    assert sum(estimate_tokens(f"- {fact.statement}\n") for fact in profile) <= 40
    assert store.facts.relevant(ana, "anything", 0) == []
    everything = store.facts.relevant(ana, "", 100_000)
    assert len(everything) == 42  # no query: stable facts only, every one when the budget allows
