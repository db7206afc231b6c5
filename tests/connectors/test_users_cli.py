"""`temper users ...`: list, show, export, forget (with and without confirmation), link, unlink."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from connectors.cli import app
from memory import MemoryStore
from tests.cli_config import use_config


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def runner(tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    use_config(tmp_path, monkeypatch, data_dir=data)
    return CliRunner()


def seed(data: Path) -> None:
    """ana on telegram (a fact, a workspace snapshot on disk), ana again on slack, bo on telegram."""
    with MemoryStore.open(data / "temper.db") as store:
        for platform, who, text in (
            ("telegram", "111", "my cat Miso likes sardines"),
            ("slack", "U9", "the Helsinki offsite is in June"),
            ("telegram", "222", "bo here, I collect cacti"),
        ):
            user_id = store.links.ensure_identity(platform, who, "Ana" if who != "222" else "Bo")
            session = store.ensure_session(f"{platform}:{who}:", platform=platform, chat_id=who, user_id=user_id,
                                           platform_user_id=who)  # fmt: skip
            message = store.add_message(session_id=session, user_id=user_id, role="user", content=text)
            if who == "111":
                store.facts.add(user_id, "Has a cat, Miso", kind="relationship", sources=[message])
                store.set_workspace_snapshot(session, "ab" * 32)
    snapshots = data / "snapshots"
    snapshots.mkdir(parents=True)
    (snapshots / f"{'ab' * 32}.tar").write_bytes(b"tar")


def test_list_and_show(runner: CliRunner, data: Path) -> None:
    seed(data)
    listed = runner.invoke(app, ["users", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    assert [(u["handle"], u["identities"], u["facts"]) for u in json.loads(listed.stdout)] == [
        ("telegram:111", ["telegram:111"], 1),
        ("slack:U9", ["slack:U9"], 0),
        ("telegram:222", ["telegram:222"], 0),
    ]
    shown = runner.invoke(app, ["users", "show", "telegram:111"])
    assert shown.exit_code == 0 and "[relationship] Has a cat, Miso" in shown.stdout
    missing = runner.invoke(app, ["users", "show", "telegram:999"])
    assert missing.exit_code == 2 and "temper users list" in missing.stderr


def test_link_then_unlink(runner: CliRunner, data: Path) -> None:
    seed(data)
    linked = runner.invoke(app, ["users", "link", "telegram:111", "slack:U9"])
    assert linked.exit_code == 0, linked.output
    assert "linked slack:U9 to telegram:111: moved" in linked.stdout
    shown = json.loads(runner.invoke(app, ["users", "show", "slack:U9", "--json"]).stdout)
    assert shown["handle"] == "telegram:111" and shown["identities"] == ["telegram:111", "slack:U9"]
    assert shown["messages"] == 2
    ahead = runner.invoke(app, ["users", "link", "telegram:111", "cli:ana"])  # not seen yet: linked ahead
    assert ahead.exit_code == 0 and "1 identities" in ahead.stdout

    split = runner.invoke(app, ["users", "unlink", "slack:U9"])
    assert split.exit_code == 0 and "into slack:U9" in split.stdout
    assert json.loads(runner.invoke(app, ["users", "show", "slack:U9", "--json"]).stdout)["messages"] == 1
    alone = runner.invoke(app, ["users", "unlink", "telegram:222"])
    assert alone.exit_code == 2 and "only identity" in alone.stderr


def test_export_then_forget(runner: CliRunner, data: Path, tmp_path: Path) -> None:
    seed(data)
    out = tmp_path / "ana.jsonl"
    exported = runner.invoke(app, ["users", "export", "telegram:111", str(out)])
    assert exported.exit_code == 0, exported.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["type"] for r in records} >= {"user", "identity", "session", "message", "fact"}
    assert "sardines" in out.read_text() and "cacti" not in out.read_text()

    declined = runner.invoke(app, ["users", "forget", "telegram:111"], input="n\n")
    assert declined.exit_code == 1 and "cannot be undone" in declined.stdout
    assert json.loads(runner.invoke(app, ["users", "list", "--json"]).stdout)[0]["handle"] == "telegram:111"

    forgot = runner.invoke(app, ["users", "forget", "telegram:111", "--yes"])
    assert forgot.exit_code == 0, forgot.output
    assert "forgot telegram:111" in forgot.stdout and "workspace snapshots removed: 1" in forgot.stdout
    assert not (data / "snapshots" / f"{'ab' * 32}.tar").exists()
    handles = [u["handle"] for u in json.loads(runner.invoke(app, ["users", "list", "--json"]).stdout)]
    assert handles == ["slack:U9", "telegram:222"]
    assert b"sardines" not in (data / "temper.db").read_bytes()


def test_an_export_that_cannot_be_written_is_one_line_and_leaves_nothing(
    runner: CliRunner, data: Path, tmp_path: Path
) -> None:
    seed(data)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep\n")
    under_a_file = runner.invoke(app, ["users", "export", "telegram:111", str(a_file / "ana.jsonl")])
    assert under_a_file.exit_code == 2 and isinstance(under_a_file.exception, SystemExit)
    assert under_a_file.stderr == f"temper: cannot write {a_file / 'ana.jsonl'}: Not a directory\n"

    # Written whole, then the rename fails (a directory has the name): no file, no .partial left.
    taken = tmp_path / "ana.jsonl"
    taken.mkdir()
    onto_a_directory = runner.invoke(app, ["users", "export", "telegram:111", str(taken)])
    assert onto_a_directory.exit_code == 2 and "temper: cannot write" in onto_a_directory.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("ana")) == ["ana.jsonl"]
    assert taken.is_dir() and not any(taken.iterdir()) and a_file.read_text() == "keep\n"
