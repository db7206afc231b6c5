"""The daemon's inbox, replies and access records in a real SQLite file: de-duplication, lane
order, deferral, the reply intent and its sent record, pruning; pairing codes and grants."""

from __future__ import annotations

import re
import time

import pytest

from memory import MemoryStore, PairingError

ALL = {"kinds": ("message", "button", "reaction"), "platforms": ("tg",), "busy_lanes": (), "limit": 10}


def put(store: MemoryStore, event: str, lane: str, kind: str = "message") -> int:
    item_id = store.inbox.add("tg", event, kind, lane, "{}")
    assert item_id is not None
    return item_id


def head_ids(store: MemoryStore, **overrides) -> list[int]:
    return [item.id for item in store.inbox.heads(**(ALL | overrides))]


def test_an_item_is_stored_once_per_platform_event(store: MemoryStore) -> None:
    first = store.inbox.add("tg", "m:1:7", "message", "tg:1:", '{"text": "hi"}')
    assert first is not None
    assert store.inbox.add("tg", "m:1:7", "message", "tg:1:", '{"text": "hi"}') is None
    assert store.inbox.add("slack", "m:1:7", "message", "slack:1:", "{}") is not None  # other platform
    assert store.inbox.depth().pending == 2


def test_lanes_are_handed_out_head_first_and_one_at_a_time(store: MemoryStore) -> None:
    a1, a2, b1 = put(store, "a1", "A"), put(store, "a2", "A"), put(store, "b1", "B")
    assert head_ids(store) == [a1, b1]
    assert head_ids(store, busy_lanes={"A"}) == [b1]
    assert head_ids(store, limit=1) == [a1]
    assert head_ids(store, kinds=("button",)) == []
    assert head_ids(store, platforms=("slack",)) == []
    store.inbox.finish(a1, "done")
    assert head_ids(store) == [a2, b1]


def test_a_lane_s_head_of_another_kind_holds_the_items_behind_it(store: MemoryStore) -> None:
    press, message, other = put(store, "p1", "A", kind="button"), put(store, "a1", "A"), put(store, "b1", "B")
    assert head_ids(store, kinds=("message",)) == [other]
    assert head_ids(store, kinds=("button", "reaction")) == [press]
    store.inbox.finish(press, "done")
    assert head_ids(store, kinds=("message",)) == [message, other]


def test_a_deferred_item_holds_its_lane_until_due_or_failed(store: MemoryStore) -> None:
    a1, a2, b1 = put(store, "a1", "A"), put(store, "a2", "A"), put(store, "b1", "B")
    assert store.inbox.defer(a1, 60, "RuntimeError: boom", max_attempts=3) is False
    assert head_ids(store) == [b1]  # a2 waits behind a1: the session keeps its order
    assert store.inbox.next_due() == pytest.approx(time.time() + 60, abs=5)
    assert store.inbox.defer(a1, 0, "again", max_attempts=3) is False
    assert head_ids(store) == [a1, b1]
    assert store.inbox.defer(a1, 0, "third time", max_attempts=3) is True
    assert head_ids(store) == [a2, b1]
    assert store.inbox.depth().failed == 1
    error = store.db.execute("select error, attempts from inbox where id = ?", (a1,)).fetchone()
    assert error == ("third time", 3)


def test_a_reply_is_an_intent_until_marked_sent(store: MemoryStore) -> None:
    item = put(store, "m1", "A")
    user = store.ensure_user("tg:ana")
    session = store.ensure_session("tg:c1:", user_id=user)
    episode = store.episodes.start(session, user, "hi")
    reply = store.inbox.add_reply(
        item, platform="tg", chat_id="c1", thread_id="", reply_to="7", text="hello", episode_id=episode
    )
    again = store.inbox.add_reply(
        item, platform="tg", chat_id="c1", thread_id="", reply_to="7", text="other", episode_id=None
    )
    assert again == reply and again.text == "hello"  # one reply per item: the first stays
    assert reply.sent_at is None and reply.idempotency_key == f"temper-reply-{reply.id}"
    assert store.inbox.reply_for(item) == reply
    assert head_ids(store) == [item]  # recorded, not sent: still pending

    store.inbox.mark_sent(reply, ["c1:100", "c1:101"])
    assert store.inbox.reply_for(item).sent_at is not None
    assert head_ids(store) == []
    assert store.inbox.depth().pending == 0
    assert store.inbox.episode_for_sent_message("tg", "c1", "c1:101") == episode
    assert store.inbox.episode_for_sent_message("tg", "c2", "c1:101") is None


def test_pruning_forgets_old_finished_items_with_their_replies(store: MemoryStore) -> None:
    done, pending = put(store, "m1", "A"), put(store, "m2", "B")
    reply = store.inbox.add_reply(
        done, platform="tg", chat_id="c1", thread_id="", reply_to=None, text="x", episode_id=None
    )
    store.inbox.mark_sent(reply, ["c1:1"])
    assert store.inbox.prune(older_than_s=3600) == 0
    assert store.inbox.prune(older_than_s=-1) == 1  # everything finished counts as old
    assert (
        store.inbox.reply_for(done) is None
        and store.inbox.episode_for_sent_message("tg", "c1", "c1:1") is None
    )
    assert head_ids(store) == [pending]
    assert store.inbox.add("tg", "m1", "message", "A", "{}") is not None  # forgotten: a new item


# --- access -------------------------------------------------------------------------------


def issue(store: MemoryStore, user: str = "42", **limits):
    policy = {"ttl_s": 3600.0, "per_user_per_day": 3, "max_pending": 20} | limits
    return store.access.issue_code("tg", user, f"chat-{user}", "Ana", **policy)


def test_a_pairing_code_is_issued_once_and_approved_once(store: MemoryStore) -> None:
    code = issue(store)
    assert code is not None and re.fullmatch(r"[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}", code.display)
    assert issue(store) is None  # one live code per person: no second reply
    assert [c.code for c in store.access.pending_codes()] == [code.code]
    assert not store.access.has_grant("tg", "42")

    grant = store.access.approve(code.display.lower())  # any case, with the dash
    assert (grant.platform, grant.platform_user_id, grant.user_name, grant.via) == (
        "tg",
        "42",
        "Ana",
        "pairing",
    )
    assert store.access.has_grant("tg", "42")
    assert store.access.pending_codes() == []
    with pytest.raises(PairingError, match="not a pending code"):
        store.access.approve(code.code)


def test_expired_codes_are_refused_and_replaced(store: MemoryStore) -> None:
    old = issue(store, ttl_s=0.0)
    with pytest.raises(PairingError, match="expired"):
        store.access.approve(old.code)
    fresh = issue(store)
    assert fresh is not None and fresh.code != old.code


def test_codes_per_person_and_pending_codes_in_all_are_limited(store: MemoryStore) -> None:
    assert issue(store, ttl_s=0.0, per_user_per_day=2) is not None
    assert issue(store, ttl_s=0.0, per_user_per_day=2) is not None
    assert issue(store, per_user_per_day=2) is None  # two today already
    assert issue(store, "7", max_pending=1) is not None
    assert issue(store, "8", max_pending=1) is None  # a flood of strangers fills nothing


def test_failed_approvals_lock_approving_for_a_while(store: MemoryStore) -> None:
    code = issue(store)
    for _ in range(5):
        with pytest.raises(PairingError, match="not a pending code"):
            store.access.approve("AAAA-AAAA")
    with pytest.raises(PairingError, match="too many failed"):
        store.access.approve(code.code)  # even the right code, until the window passes
    assert not store.access.has_grant("tg", "42")


def test_grants_and_revocation(store: MemoryStore) -> None:
    store.access.grant("slack", "U1", "Bo")
    code = issue(store)
    assert [(g.platform, g.platform_user_id, g.via) for g in store.access.grants()] == [
        ("slack", "U1", "operator")
    ]
    assert store.access.revoke("slack", "U1") is True
    assert store.access.revoke("slack", "U1") is False
    assert store.access.revoke("tg", "42") is False  # no grant, but the live code is withdrawn
    with pytest.raises(PairingError):
        store.access.approve(code.code)


def test_finished_items_stay_finished_and_dropped_ones_keep_no_words(store: MemoryStore) -> None:
    done = store.inbox.add("tg", "m1", "message", "A", '{"text": "answered"}')
    dropped = store.inbox.add("tg", "m2", "message", "B", '{"text": "a stranger wrote this"}')
    store.inbox.finish(done, "done")
    store.inbox.finish(dropped, "dropped")
    assert store.inbox.defer(done, 0, "a failure after the reply went out", max_attempts=1) is False
    rows = store.db.execute("select status, payload from inbox order by id").fetchall()
    assert rows == [("done", '{"text": "answered"}'), ("dropped", "")]
