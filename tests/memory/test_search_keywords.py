"""Keywords stop at the stages that hold all their terms (or all but the commonest); a
question goes on to the OR matches its rerank needs (search.py, _run_stages)."""

import time

from memory import MemoryStore, NewMessage


def test_keywords_skip_one_word_matches_once_a_message_holds_them_all(store: MemoryStore) -> None:
    rows = [
        ("both", "the lighthouse keeper painted the boat"),
        ("keeper", "the goal keeper was late"),
        ("boat", "we rented a boat for the weekend"),
    ]
    store.add_messages(
        NewMessage(session="s", user="ana", role="user", content=text, ts=time.time(), external_id=eid)
        for eid, text in rows
    )
    found = [hit.external_id for hit in store.search("lighthouse keeper boat", user="ana")]
    assert found == ["both"]
    asked = [hit.external_id for hit in store.search("who painted the lighthouse keeper boat?", user="ana")]
    assert asked[0] == "both" and {"keeper", "boat"} <= set(asked)
    # With no message holding every term, keywords still relax to OR.
    assert {hit.external_id for hit in store.search("goal weekend", user="ana")} == {"keeper", "boat"}
