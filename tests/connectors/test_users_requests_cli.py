"""`temper users requests|approve|deny`: the operator's side of in-chat links with approval."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from connectors.cli import app
from memory import MemoryStore


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in [name for name in os.environ if name.startswith("TEMPER_")]:
        monkeypatch.delenv(name)
    path = tmp_path / "config.toml"
    path.write_text(f'data_dir = "{tmp_path / "data"}"\n[users]\nlink_approval = "operator"\n')
    return path


def users(config: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["--config", str(config), "users", *args])
    return result.exit_code, result.output


def request_from(db: Path, platform: str, who: str) -> int:
    """telegram:111 asks for a code and `who` on `platform` sends it: the request's id."""
    with MemoryStore.open(db) as store:
        store.links.ensure_identity("telegram", "111", "Ana")
        code = store.links.issue_code("telegram", "111", ttl_s=600)
        assert code is not None
        return store.links.request(code.code, platform, who, "Ana").id


def test_requests_lists_pending_ones_and_approve_links(config: Path, tmp_path: Path) -> None:
    db = tmp_path / "data" / "temper.db"
    assert users(config, "requests") == (0, "no link requests waiting\n")
    first = request_from(db, "slack", "U9")
    rc, listed = users(config, "requests")
    assert rc == 0 and listed.startswith(f"#{first}  slack:U9 (Ana) asks to join telegram:111 (#1)"), listed
    assert "pending" in listed and "temper users approve ID" in listed
    rc, as_json = users(config, "requests", "--json")
    assert rc == 0
    assert [(r["id"], r["identity"], r["user"], r["state"]) for r in json.loads(as_json)] == [
        (first, "slack:U9", "telegram:111", "pending")
    ]

    rc, approved = users(config, "approve", str(first))
    assert rc == 0 and approved.startswith(f"approved #{first}: slack:U9 joined telegram:111: moved"), (
        approved
    )
    with MemoryStore.open(db) as store:
        assert store.user_for_identity("slack", "U9") == store.user_for_identity("telegram", "111")
    rc, twice = users(config, "approve", str(first))
    assert rc == 2 and f"link request #{first} was already approved" in twice
    assert users(config, "requests") == (0, "no link requests waiting\n")
    rc, everything = users(config, "requests", "--all")
    assert rc == 0 and "approved" in everything and "temper users approve" not in everything


def test_expired_and_unknown_requests_are_refused(config: Path, tmp_path: Path) -> None:
    db = tmp_path / "data" / "temper.db"
    stale = request_from(db, "slack", "U9")
    with MemoryStore.open(db) as store:
        store.db.execute("update link_requests set expires_at = ?", (time.time() - 1,))
    assert users(config, "requests") == (0, "no link requests waiting\n")
    rc, listed = users(config, "requests", "--all")
    assert rc == 0 and "expired" in listed
    rc, late = users(config, "approve", str(stale))
    assert rc == 2 and "expired" in late and "/link" in late
    rc, unknown = users(config, "deny", "42")
    assert rc == 2 and "no link request #42" in unknown
    with MemoryStore.open(db) as store:
        assert store.user_for_identity("slack", "U9") is None
