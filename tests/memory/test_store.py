import time

import pytest

from memory import MemoryStore, NewMessage, UnknownRecordError
from memory.maintenance import segments


def fts_integrity(store: MemoryStore) -> None:
    # Raises if the index and the messages table disagree.
    store.db.execute("insert into messages_fts(messages_fts, rank) values ('integrity-check', 1)")


def add(
    store: MemoryStore,
    text: str,
    user: str = "ana",
    session: str = "s1",
    role: str = "user",
    ts: float | None = None,
) -> int:
    user_id = store.ensure_user(user)
    session_id = store.ensure_session(session, user_id=user_id)
    return store.add_message(session_id=session_id, user_id=user_id, role=role, content=text, ts=ts)


def ids(hits) -> list[int]:
    return [hit.id for hit in hits]


def test_insert_update_delete_keep_the_index_in_sync(store: MemoryStore) -> None:
    message_id = add(store, "the blue bicycle is in the garage")
    assert ids(store.search("bicycle", user="ana")) == [message_id]
    store.update_message(message_id, "the red scooter is in the garage")
    assert store.search("bicycle", user="ana") == []
    assert ids(store.search("scooter", user="ana")) == [message_id]
    fts_integrity(store)
    store.delete_message(message_id)
    assert store.search("scooter", user="ana") == []
    fts_integrity(store)
    with pytest.raises(UnknownRecordError):
        store.delete_message(message_id)


def test_trigram_index_follows_updates_between_scripts(store: MemoryStore) -> None:
    message_id = add(store, "plain ascii")
    store.update_message(message_id, "会議は木曜日です")
    assert ids(store.search("木曜日", user="ana")) == [message_id]
    store.update_message(message_id, "plain again")
    assert store.search("木曜日", user="ana") == []
    assert store.stats().trigram_rows == 0


def test_text_is_stored_once(store: MemoryStore) -> None:
    add(store, "zebra " * 200)
    # External-content index: no copy of the text inside the FTS tables.
    content_tables = {
        row[0] for row in store.db.execute("select name from sqlite_schema where name like 'messages_fts%'")
    }
    assert "messages_fts_content" not in content_tables


def test_users_identities_and_sessions(store: MemoryStore) -> None:
    ana = store.ensure_user("ana")
    assert store.ensure_user("ana") == ana
    store.link_identity("telegram", "1001", ana)
    store.link_identity("slack", "U01", ana)
    assert store.user_for_identity("telegram", "1001") == ana
    assert store.user_for_identity("slack", "U01") == ana
    assert store.user_for_identity("slack", "nobody") is None
    session = store.ensure_session("telegram:42:", platform="telegram", chat_id="42", user_id=ana)
    assert store.ensure_session("telegram:42:") == session
    first = store.add_message(session_id=session, user_id=ana, role="user", content="hello", ts=1)
    second = store.add_message(session_id=session, user_id=ana, role="assistant", content="hi ana", ts=2)
    assert [m.id for m in store.recent_messages(session)] == [first, second]
    assert [m.id for m in store.recent_messages(session, limit=1)] == [second]


def test_external_ids_deduplicate(store: MemoryStore) -> None:
    batch = [
        NewMessage("s", "ana", "user", "one", 1.0, "x1"),
        NewMessage("s", "ana", "user", "two", 2.0, "x2"),
    ]
    assert store.add_messages(batch).added == 2
    report = store.add_messages(batch + [NewMessage("s", "ana", "user", "three", 3.0, "x3")])
    assert (report.added, report.duplicates) == (1, 2)
    assert store.stats().messages == 3


def test_bad_role_is_refused_before_anything_is_written(store: MemoryStore) -> None:
    with pytest.raises(ValueError, match="role must be one of"):
        store.add_messages(
            [NewMessage("s", "ana", "user", "ok", 1.0, "a"), NewMessage("s", "ana", "boss", "no", 2.0, "b")]
        )
    assert store.stats().messages == 0
    assert store.stats().users == 0  # the transaction rolled back, users included
    assert store.add_messages([NewMessage("s", "ana", "user", "ok", 1.0, "a")]).added == 1


def test_facts_belong_to_a_user(store: MemoryStore) -> None:
    ana = store.ensure_user("ana")
    source = add(store, "I am allergic to shellfish")
    fact_id = store.facts.add(ana, "allergic to shellfish", sources=[source], confidence=0.9).fact.id
    [fact] = store.facts.for_user(ana)
    assert (fact.id, fact.statement, fact.source_message_id, fact.confidence) == (
        fact_id,
        "allergic to shellfish",
        source,
        0.9,
    )
    assert store.facts.for_user(store.ensure_user("bo")) == []
    with pytest.raises(ValueError):
        store.facts.add(ana, "x", confidence=1.5)


def test_maintenance_runs_and_stats_count(store: MemoryStore) -> None:
    for i in range(50):
        add(store, f"message number {i} about gardening", ts=time.time())
    timings = store.maintain()
    assert set(timings) == {"fts_optimize", "trigram_optimize", "wal_checkpoint", "incremental_vacuum"}
    stats = store.stats()
    assert (stats.messages, stats.users, stats.sessions) == (50, 1, 1)
    assert stats.text_bytes == sum(len(f"message number {i} about gardening") for i in range(50))
    assert stats.wal_bytes == 0  # truncated by the checkpoint
    fts_integrity(store)


def test_the_hourly_merge_leaves_one_segment_and_the_same_search_results(store: MemoryStore) -> None:
    # Each message its own write: each adds a segment to both indexes (automerge keeps up to 8
    # a level), as a long-running daemon's messages do.
    for i in range(120):
        add(store, f"what is next on my list number {i}, the gardening one?", ts=time.time())
    assert segments(store.db, "messages_fts") > 4
    before = [(h.id, h.snippet) for h in store.search("what's next on my list?", user="ana", limit=10)]
    assert len(before) == 10
    for _ in range(5):  # bounded steps: a large index gets there over a few runs
        left = store.merge_segments()
    assert left["messages_fts"] == 1 and left["messages_trigram"] <= 1
    assert [
        (h.id, h.snippet) for h in store.search("what's next on my list?", user="ana", limit=10)
    ] == before
    fts_integrity(store)


def test_writes_in_one_transaction_are_stored_together_or_not_at_all(store: MemoryStore) -> None:
    user_id = store.ensure_user("ana")
    session_id = store.ensure_session("s1", user_id=user_id)
    with store.transaction():
        message_id = store.add_message(session_id=session_id, user_id=user_id, role="user", content="hello")
        episode_id = store.episodes.start(session_id, user_id, "hello", message_id)
    assert (
        store.episodes.get(episode_id).status == "running"
        and store.get_message(message_id).content == "hello"
    )

    with pytest.raises(RuntimeError, match="crash"), store.transaction():
        store.add_message(session_id=session_id, user_id=user_id, role="user", content="lost")
        store.episodes.start(session_id, user_id, "lost")
        raise RuntimeError("crash between the writes")
    assert [m.content for m in store.recent_messages(session_id)] == ["hello"]
    assert store.episodes.latest(session_id).id == episode_id
    store.add_message(
        session_id=session_id, user_id=user_id, role="user", content="later"
    )  # the store still writes
    assert store.stats().messages == 2


def test_users_have_messages_outside_a_set_of_ids(store: MemoryStore) -> None:
    first, second = add(store, "one"), add(store, "two")
    other = add(store, "three", user="ben", session="s2")
    ana = store.user_id("ana")
    assert ana is not None
    assert not store.has_messages_outside(ana, {first, second})
    assert store.has_messages_outside(ana, {second, other})
    assert store.has_messages_outside(ana, set())
    assert not store.has_messages_outside(12345, set())
