"""One person across platforms (memory/linking.py): link in both directions, shared recall and
facts, unlink splitting them back, one-time codes."""

from __future__ import annotations

import time

import pytest

from memory import LinkError, MemoryStore


def chat(store: MemoryStore, platform: str, who: str, text: str, chat_id: str | None = None) -> int:
    """A message as the agent stores one: the identity's user, its own session."""
    user_id = store.links.ensure_identity(platform, who, "Ana")
    chat_id = chat_id or who
    session_id = store.ensure_session(
        f"{platform}:{chat_id}:", platform=platform, chat_id=chat_id, user_id=user_id, platform_user_id=who
    )
    return store.add_message(session_id=session_id, user_id=user_id, role="user", content=text)


def handle_of(store: MemoryStore, platform: str, who: str) -> str:
    user_id = store.user_for_identity(platform, who)
    assert user_id is not None
    return store.user_handle(user_id)


@pytest.mark.parametrize("direction", ["telegram joins slack", "slack joins telegram"])
def test_linked_identities_share_recall_and_facts_and_unlink_splits_them(
    store: MemoryStore, direction: str
) -> None:
    tg = chat(store, "telegram", "111", "my bike is a green Brompton")
    sl = chat(store, "slack", "U9", "the quarterly report is due on Friday")
    tg_user, sl_user = store.user_for_identity("telegram", "111"), store.user_for_identity("slack", "U9")
    assert tg_user is not None and sl_user is not None
    store.facts.add(tg_user, "Rides a green Brompton", sources=[tg])
    store.facts.add(sl_user, "Has a quarterly report due Friday", kind="plan", sources=[sl])
    bystander = chat(store, "telegram", "222", "my bike is a red Brompton")

    if direction == "telegram joins slack":
        report = store.links.link(sl_user, "telegram", "111")
        kept, gone = sl_user, tg_user
    else:
        report = store.links.link(tg_user, "slack", "U9")
        kept, gone = tg_user, sl_user
    assert report.removed_user == gone and report.moved["messages"] == 1
    assert store.user_for_identity("telegram", "111") == store.user_for_identity("slack", "U9") == kept
    handle = store.user_handle(kept)
    assert {hit.id for hit in store.search("Brompton bike report Friday", user=handle)} == {tg, sl}
    assert {f.statement for f in store.facts.for_user(kept)} == {
        "Rides a green Brompton",
        "Has a quarterly report due Friday",
    }
    assert bystander not in {hit.id for hit in store.search("Brompton", user=handle)}

    # new conversation after the link lands on the same user
    later = chat(store, "telegram", "111", "also I sold the Brompton yesterday")
    assert store.get_message(later).user == handle

    split = store.links.unlink("telegram", "111")
    tg_handle = handle_of(store, "telegram", "111")
    assert split.user_id == store.user_for_identity("telegram", "111") != kept
    assert {hit.id for hit in store.search("Brompton", user=tg_handle)} == {tg, later}
    assert {hit.id for hit in store.search("Brompton report", user=handle_of(store, "slack", "U9"))} == {sl}
    assert [f.statement for f in store.facts.for_user(split.user_id)] == ["Rides a green Brompton"]
    sl_facts = store.facts.for_user(store.user_for_identity("slack", "U9") or 0)
    assert [f.statement for f in sl_facts] == ["Has a quarterly report due Friday"]


def test_a_fact_learned_from_both_sides_stays_with_both_after_unlink(store: MemoryStore) -> None:
    a = chat(store, "telegram", "111", "I'm vegetarian")
    user_id = store.user_for_identity("telegram", "111")
    assert user_id is not None
    store.links.link(user_id, "slack", "U9")
    b = chat(store, "slack", "U9", "still vegetarian, yes")
    fact = store.facts.add(user_id, "Is vegetarian", kind="preference", sources=[a, b]).fact
    old = store.facts.add(user_id, "Lives in Lyon", sources=[b]).fact
    store.facts.supersede(user_id, old.id, "Lives in Nice", sources=[a])
    split = store.links.unlink("slack", "U9")
    mine = {f.statement: f.sources for f in store.facts.for_user(user_id)}
    theirs = {f.statement: f.sources for f in store.facts.for_user(split.user_id)}
    assert mine == {"Is vegetarian": (a,), "Lives in Nice": (a,)}
    assert theirs == {"Is vegetarian": (b,), "Lives in Lyon": (b,)}  # its history is its own again
    assert store.facts.get(user_id, fact.id).sources == (a,)


def test_unlink_refuses_a_users_only_identity(store: MemoryStore) -> None:
    chat(store, "telegram", "111", "hello")
    with pytest.raises(LinkError, match="only identity"):
        store.links.unlink("telegram", "111")
    with pytest.raises(LinkError, match="no identity"):
        store.links.unlink("slack", "nobody")


def test_a_link_code_joins_the_sender_once(store: MemoryStore) -> None:
    chat(store, "telegram", "111", "hi from telegram")
    chat(store, "slack", "U9", "hi from slack")
    code = store.links.issue_code("telegram", "111", ttl_s=600)
    assert code is not None and len(code.code) == 8
    with pytest.raises(LinkError, match="other account"):
        store.links.redeem(code.code, "telegram", "111")
    report = store.links.redeem(code.display.lower(), "slack", "U9")
    assert (
        report.user_id == store.user_for_identity("telegram", "111") == store.user_for_identity("slack", "U9")
    )
    with pytest.raises(LinkError, match="unknown, used or expired"):
        store.links.redeem(code.code, "cli", "someone")


def test_an_expired_code_and_guessing_are_refused(store: MemoryStore) -> None:
    chat(store, "telegram", "111", "hi")
    code = store.links.issue_code("telegram", "111", ttl_s=60)
    assert code is not None
    store.db.execute("update link_codes set expires_at = ?", (time.time() - 1,))
    with pytest.raises(LinkError, match="expired"):
        store.links.redeem(code.code, "slack", "U9")
    for _ in range(4):
        with pytest.raises(LinkError):
            store.links.redeem("AAAA-AAAA", "slack", "U9")
    fresh = store.links.issue_code("telegram", "111", ttl_s=600)
    assert fresh is not None
    with pytest.raises(LinkError, match="too many"):
        store.links.redeem(fresh.code, "slack", "U9")  # even a right code, while the window lasts
    assert store.user_for_identity("slack", "U9") is None


def test_merge_joins_an_imported_user(store: MemoryStore) -> None:
    chat(store, "telegram", "111", "hello")
    imported = store.ensure_user("ana-archive")
    session = store.ensure_session("import-1", user_id=imported)
    store.add_message(session_id=session, user_id=imported, role="user", content="old note about tulips")
    user_id = store.user_for_identity("telegram", "111")
    assert user_id is not None
    report = store.links.merge(user_id, imported)
    assert report.removed_user == imported and store.user_id("ana-archive") is None
    assert [hit.content for hit in store.search("tulips", user="telegram:111")] == ["old note about tulips"]
    again = store.ensure_user("ana-archive")  # the handle cache forgot the deleted user: a new row
    assert store.user_handle(again) == "ana-archive" and store.users.get(again).messages == 0
