"""Link requests (memory/linking.py `request`/`approve`/`deny`, memory/link_requests.py): a code
sent with operator approval on links nothing until approved, then links exactly as a redeem."""

from __future__ import annotations

import io
import json
import time

import pytest

from memory import LinkError, MemoryStore


def chat(store: MemoryStore, platform: str, who: str, text: str) -> int:
    user_id = store.links.ensure_identity(platform, who, "Ana")
    session_id = store.ensure_session(
        f"{platform}:{who}:", platform=platform, chat_id=who, user_id=user_id, platform_user_id=who
    )
    return store.add_message(session_id=session_id, user_id=user_id, role="user", content=text)


def asked(store: MemoryStore, ttl_s: float = 600.0) -> tuple[int, str]:
    """telegram:111 asks for a code; slack:U9 sends it: the request's id, and the code."""
    code = store.links.issue_code("telegram", "111", ttl_s=ttl_s)
    assert code is not None
    request = store.links.request(code.display, "slack", "U9", "Ana on Slack")
    assert request.state() == "pending" and request.user_handle == "telegram:111"
    assert request.expires_at - request.created_at == pytest.approx(ttl_s)  # the code's TTL, from now
    return request.id, code.code


@pytest.fixture
def two_accounts(store: MemoryStore) -> tuple[int, int]:
    tg = chat(store, "telegram", "111", "my bike is a green Brompton")
    sl = chat(store, "slack", "U9", "the quarterly report is due on Friday")
    tg_user = store.user_for_identity("telegram", "111")
    assert tg_user is not None
    store.facts.add(tg_user, "Rides a green Brompton", sources=[tg])
    return tg, sl


def test_approval_links_as_a_redeem_would_and_only_once(
    store: MemoryStore, two_accounts: tuple[int, int]
) -> None:
    tg, sl = two_accounts
    request_id, code = asked(store)
    assert store.user_for_identity("slack", "U9") != store.user_for_identity("telegram", "111")
    with pytest.raises(LinkError, match="unknown, used or expired"):
        store.links.request(code, "slack", "U9")  # the code was used by the request
    with pytest.raises(LinkError, match="unknown, used or expired"):
        store.links.redeem(code, "slack", "U9")
    assert [r.id for r in store.links.requests()] == [request_id]

    request, report = store.links.approve(request_id)
    user_id = store.user_for_identity("telegram", "111")
    assert request.identity == "slack:U9" and report.user_id == user_id
    assert report.moved["messages"] == 1 and report.removed_user is not None
    assert store.user_for_identity("slack", "U9") == user_id
    assert {hit.id for hit in store.search("Brompton bike report Friday", user="telegram:111")} == {tg, sl}
    assert [f.statement for f in store.facts.for_user(user_id or 0)] == ["Rides a green Brompton"]
    assert store.links.requests() == []
    latest = store.links.latest_request("slack", "U9")
    assert latest is not None and latest.state() == "approved"
    with pytest.raises(LinkError, match="already approved"):
        store.links.approve(request_id)
    with pytest.raises(LinkError, match="already approved"):
        store.links.deny(request_id)


def test_a_denied_request_links_nothing(store: MemoryStore, two_accounts: tuple[int, int]) -> None:
    request_id, _ = asked(store)
    denied = store.links.deny(request_id)
    assert denied.identity == "slack:U9"
    with pytest.raises(LinkError, match="already denied"):
        store.links.approve(request_id)
    assert store.user_for_identity("slack", "U9") != store.user_for_identity("telegram", "111")
    assert [hit.content for hit in store.search("Brompton report", user="slack:U9")] == [
        "the quarterly report is due on Friday"
    ]
    assert [r.state() for r in store.links.requests(include_closed=True)] == ["denied"]


def test_an_expired_request_links_nothing(store: MemoryStore, two_accounts: tuple[int, int]) -> None:
    request_id, _ = asked(store, ttl_s=60.0)
    store.db.execute("update link_requests set expires_at = ?", (time.time() - 1,))
    assert store.links.requests() == []
    with pytest.raises(LinkError, match="expired"):
        store.links.approve(request_id)
    with pytest.raises(LinkError, match="expired"):
        store.links.deny(request_id)
    with pytest.raises(LinkError, match="no link request #99"):
        store.links.approve(99)
    assert store.user_for_identity("slack", "U9") != store.user_for_identity("telegram", "111")
    assert store.links.prune(older_than_s=0) == 1 and store.links.requests(include_closed=True) == []


def test_a_pending_request_follows_its_user_into_a_merge(
    store: MemoryStore, two_accounts: tuple[int, int]
) -> None:
    request_id, _ = asked(store)
    archive = store.ensure_user("ana-archive")
    tg_user = store.user_for_identity("telegram", "111")
    assert tg_user is not None
    store.links.merge(archive, tg_user)  # telegram:111's user is deleted; the request now joins archive
    request, _ = store.links.approve(request_id)
    assert request.user_id == archive == store.user_for_identity("slack", "U9")


def test_forgetting_the_sender_removes_the_request_they_sent(
    store: MemoryStore, two_accounts: tuple[int, int]
) -> None:
    """A pending request names the sender's platform id and display name: forget takes it too."""
    asked(store)
    sender = store.user_for_identity("slack", "U9")
    assert sender is not None
    store.users.forget(sender)
    assert store.links.requests() == []
    assert store.db.execute("select count(*) from link_requests").fetchone() == (0,)
    assert store.user_for_identity("telegram", "111") is not None  # the other account is untouched


def test_the_sender_s_export_holds_the_request_they_sent(
    store: MemoryStore, two_accounts: tuple[int, int]
) -> None:
    asked(store)
    sender = store.user_for_identity("slack", "U9")
    assert sender is not None
    out = io.StringIO()
    store.users.export(sender, out)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    sent = [r for r in records if r["type"] == "link_request"]
    assert len(sent) == 1 and sent[0]["display_name"] == "Ana on Slack"
