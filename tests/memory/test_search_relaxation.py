"""The relaxation stages answered by one query (search.py, _Terms.relaxed): a message holding
every term ranks above one holding all but the commonest, and so on; a full window falls back
to one query per stage, so no older full match is lost."""

import time

import pytest

from memory import MemoryStore, NewMessage, index_terms

NOW = time.time()


def load(store: MemoryStore, rows: list[tuple[str, str]]) -> None:
    """rows: (external id, content), oldest first, one minute apart."""
    store.add_messages(
        NewMessage(
            session="s", user="ana", role="user", content=text, ts=NOW - (len(rows) - i) * 60, external_id=eid
        )
        for i, (eid, text) in enumerate(rows)
    )


def found(store: MemoryStore, text: str) -> list[str]:
    return [hit.external_id or "" for hit in store.search(text, user="ana")]


@pytest.fixture
def stages(store: MemoryStore) -> MemoryStore:
    # Rarity: walrus (4 messages) < violin (5) < concert (6) < evening (7).
    load(
        store,
        [
            ("all", "the walrus played the violin at the evening concert"),
            ("three", "a walrus with a violin at a concert"),
            # Would outscore "three" in one flat ranking: its rare words repeat, side by side.
            ("two-and-commonest", "walrus violin walrus violin walrus violin evening"),
            ("rarest-only", "a walrus swam past"),
            ("filler-1", "violin lessons on an evening before the concert"),
            ("filler-2", "concert tickets for the evening"),
            ("filler-3", "concert hall evening"),
            ("filler-4", "a quiet evening"),
        ],
    )
    return store


def test_each_stage_ranks_below_the_one_holding_more_terms(stages: MemoryStore) -> None:
    # "two-and-commonest" holds "evening" but not "concert": it is stage 2 (the two rarest),
    # below "three" (all but the commonest). Keywords stop before the OR stages.
    assert found(stages, "walrus violin concert evening") == ["all", "three", "two-and-commonest"]


def test_all_terms_common_gives_the_same_stages(stages: MemoryStore, monkeypatch) -> None:
    # Every term past the frequency cap: the one query runs only if the AND it reads is
    # expected to fit its window; either way the stages are the same.
    monkeypatch.setattr(index_terms, "PROBE_CAP", 2)
    assert found(stages, "walrus violin concert evening") == ["all", "three", "two-and-commonest"]


def test_a_full_window_falls_back_to_a_query_per_stage(store: MemoryStore, monkeypatch) -> None:
    monkeypatch.setattr(index_terms, "WINDOW", 3)
    load(
        store,
        [("old-all", "walrus violin concert")]
        + [(f"pair-{i}", "walrus violin") for i in range(5)]
        + [(f"concert-{i}", "concert") for i in range(10)],
    )
    # The newest three walrus-violin matches are all pairs; the older full match still leads.
    hits = found(store, "walrus violin concert")
    assert hits[0] == "old-all"
    assert hits[1:] == ["pair-4", "pair-3", "pair-2"]
