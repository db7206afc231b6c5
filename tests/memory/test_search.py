import time

import pytest

from memory import MemoryStore, NewMessage, index_terms
from memory import search as search_module

DAY = 86_400.0
NOW = time.time()


def load(store: MemoryStore, rows: list[tuple[str, str, str, str, float]]) -> None:
    """rows: (external id, user, session, content, age in days)."""
    store.add_messages(
        NewMessage(
            session=session, user=user, role="user", content=content, ts=NOW - age * DAY, external_id=eid
        )
        for eid, user, session, content, age in rows
    )


def found(store: MemoryStore, text: str, **kwargs) -> list[str]:
    kwargs.setdefault("user", "ana")
    return [hit.external_id for hit in store.search(text, **kwargs)]


@pytest.fixture
def chat(store: MemoryStore) -> MemoryStore:
    load(
        store,
        [
            ("sister", "ana", "a1", "My sister just moved to Lisbon for her new job at the aquarium", 40),
            ("moving", "ana", "a1", "We are moving the team offsite to next Friday", 10),
            ("dentist", "ana", "a2", "Dentist appointment on the 14th at 9:30, don't forget", 20),
            ("db", "ana", "a2", "We decided to use Postgres 16 for the billing service", 30),
            ("err", "ana", "a3", "The installer failed with ERR_0x80040154 again", 5),
            ("kanji", "ana", "a3", "来週の会議は木曜日に変更になりました", 3),
            ("cafe", "ana", "a3", "Meet me at the café near the station", 2),
            ("bo-sister", "bo", "b1", "My sister moved to Berlin last year", 1),
        ],
    )
    return store


def test_question_finds_the_message_through_stems_and_stop_words(chat: MemoryStore) -> None:
    assert found(chat, "where did my sister move?")[0] == "sister"


def test_scoped_to_the_asking_user(chat: MemoryStore) -> None:
    assert "bo-sister" not in found(chat, "sister moved")
    assert found(chat, "sister moved", user="bo") == ["bo-sister"]
    assert set(found(chat, "sister moved", user=None, all_users=True)) >= {"sister", "bo-sister"}
    with pytest.raises(ValueError, match="needs user"):
        chat.search("sister")
    assert found(chat, "sister", user="nobody") == []


def test_and_before_or(chat: MemoryStore) -> None:
    # "team" matches only the offsite message, "Lisbon" only the sister one: no message has
    # both, so AND finds nothing and the search relaxes to OR, returning both.
    assert set(found(chat, "team Lisbon")) == {"moving", "sister"}
    # When one message has all the words, it ranks first.
    assert found(chat, "sister Lisbon job")[0] == "sister"


def test_phrase_and_prefix(chat: MemoryStore) -> None:
    assert found(chat, '"billing service"') == ["db"]
    assert found(chat, '"service billing"') == []  # a phrase keeps its order
    assert found(chat, "postgr*") == ["db"]
    assert found(chat, "aqua*")[0] == "sister"


def test_substrings_identifiers_and_other_scripts(chat: MemoryStore) -> None:
    assert found(chat, "ERR_0x80040154") == ["err"]
    assert found(chat, "80040154") == ["err"]  # inside a token: the bounded scan
    assert found(chat, "木曜日") == ["kanji"]  # trigram index
    assert found(chat, "会議") == ["kanji"]  # two characters: scan
    assert found(chat, "cafe") == ["cafe"]  # diacritics removed


def test_filters_by_session_role_and_time(chat: MemoryStore) -> None:
    assert found(chat, "postgres", session="a2") == ["db"]
    assert found(chat, "postgres", session="a1") == []
    assert found(chat, "postgres", role="assistant") == []
    assert found(chat, "postgres", role="user") == ["db"]
    assert found(chat, "we", since=NOW - 15 * DAY) == ["moving"]
    assert found(chat, "we", until=NOW - 15 * DAY) == ["db"]


def test_recency_breaks_ties(store: MemoryStore) -> None:
    load(
        store,
        [
            ("old", "ana", "s", "the garden hose is leaking", 400),
            ("new", "ana", "s", "the garden hose is leaking", 1),
        ],
    )
    assert found(store, "garden hose") == ["new", "old"]
    [new, old] = store.search("garden hose", user="ana")
    assert new.score > old.score


def test_snippets_mark_the_matches(chat: MemoryStore) -> None:
    [hit] = chat.search('"billing service"', user="ana")
    assert "[billing service]" in hit.snippet
    assert hit.session == "a2" and hit.user == "ana" and hit.role == "user"


def test_common_word_queries_answer_from_the_newest_window(store: MemoryStore, monkeypatch) -> None:
    # With more matches than the window, the newest window is ranked, not every match.
    monkeypatch.setattr(index_terms, "WINDOW", 50)
    load(
        store, [(f"m{i}", "ana", "s", f"status update number {i} for the team", 1000 - i) for i in range(300)]
    )
    hits = found(store, "status update team", limit=10)
    assert len(hits) == 10
    newest_window = {f"m{i}" for i in range(250, 300)}
    assert set(hits) <= newest_window


def test_terms_that_go_together_more_than_expected_still_answer_from_the_newest_window(
    store: MemoryStore, monkeypatch
) -> None:
    # Each of "walrus" and "violin" is in 1 message of 20, always together: as if independent,
    # about 15 messages would hold both, so the query reads oldest first (the faster way for
    # a few rows), finds the window full, and must read the newest instead.
    monkeypatch.setattr(index_terms, "WINDOW", 50)
    load(
        store,
        [
            (f"m{i}", "ana", "s", "walrus violin duet" if i % 20 == 0 else f"filler note {i}", 6000 - i)
            for i in range(6000)
        ],
    )
    hits = found(store, "walrus violin", limit=10)
    assert len(hits) == 10
    newest_window = {f"m{i}" for i in range(6000 - 50 * 20, 6000, 20)}
    assert set(hits) <= newest_window


def test_limit_is_respected_and_bounded(chat: MemoryStore) -> None:
    assert len(found(chat, "the", limit=2)) == 2
    assert len(chat.search("the", user="ana", limit=10_000)) <= search_module.MAX_LIMIT


def test_scoped_common_words_search_the_newest_rows_first_without_losing_rare_answers(
    store: MemoryStore, monkeypatch
) -> None:
    monkeypatch.setattr(index_terms, "PROBE_CAP", 20)
    monkeypatch.setattr(index_terms, "SCOPE_WINDOW", 10)
    load(store, [("lisbon", "ana", "s", "my sister moved to Lisbon", 90)])
    load(
        store,
        [(f"call{i}", "ana", "s", f"my sister called about dinner {i}", 50 - i * 0.1) for i in range(60)],
    )
    load(store, [(f"bo{i}", "bo", "t", "my sister called about dinner", 1) for i in range(30)])
    # "sister" is dense in ana's scope, "lisbon" rare: the rare term's match is not floored.
    assert found(store, "sister Lisbon")[0] == "lisbon"
    # Only dense terms: the newest rows answer first.
    newest = found(store, "sister called dinner", limit=5)
    assert newest == ["call59", "call58", "call57", "call56", "call55"]
