"""`temper memory ...`: the exact command shapes other tools script against."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from connectors.cli import app
from tests.cli_config import use_config

LINES = [
    {
        "id": "m1",
        "session": "s1",
        "user": "ana",
        "role": "user",
        "content": "My sister just moved to Lisbon",
        "ts": "2026-09-01T10:00:00Z",
    },
    {
        "id": "m2",
        "session": "s1",
        "user": "ana",
        "role": "assistant",
        "content": "Lisbon is lovely in autumn",
        "ts": "2026-09-01T10:00:05Z",
    },
    {
        "id": "m3",
        "session": "s2",
        "user": "bo",
        "role": "user",
        "content": "My sister moved to Berlin",
        "ts": 1788000000,
    },
]


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    use_config(tmp_path, monkeypatch)
    return CliRunner()


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def test_import_reports_bad_lines_and_is_idempotent(runner: CliRunner, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", LINES[:2] + ["{broken"] + LINES[2:])
    first = runner.invoke(app, ["memory", "import", str(source)])
    assert first.exit_code == 1  # some lines were skipped; the good ones landed
    assert "line 3: not valid JSON" in first.stderr
    assert "imported 3 messages" in first.stdout
    second = runner.invoke(app, ["memory", "import", str(source)])
    assert "imported 0 messages" in second.stdout and "3 already present" in second.stdout


def test_search_json_shape(runner: CliRunner, tmp_path: Path) -> None:
    runner.invoke(app, ["memory", "import", str(write_jsonl(tmp_path / "in.jsonl", LINES))])
    result = runner.invoke(app, ["memory", "search", "where did my sister move?", "--user", "ana", "--json"])
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert [h["external_id"] for h in hits] == ["m1"]
    assert set(hits[0]) == {
        "id",
        "external_id",
        "session",
        "user",
        "role",
        "content",
        "ts",
        "score",
        "snippet",
    }
    assert hits[0]["session"] == "s1" and hits[0]["ts"].startswith("2026-09-01T10:00:00")
    everyone = json.loads(runner.invoke(app, ["memory", "search", "sister", "--json"]).stdout)
    assert {h["user"] for h in everyone} == {"ana", "bo"}
    limited = json.loads(
        runner.invoke(app, ["memory", "search", "lisbon", "--user", "ana", "--limit", "1", "--json"]).stdout
    )
    assert len(limited) == 1
    in_session = json.loads(
        runner.invoke(app, ["memory", "search", "lisbon", "--session", "s1", "--json"]).stdout
    )
    assert {h["session"] for h in in_session} == {"s1"}
    assert json.loads(runner.invoke(app, ["memory", "search", '"unbalanced AND (', "--json"]).stdout) == []


def test_stats_and_export_round_trip(runner: CliRunner, tmp_path: Path) -> None:
    runner.invoke(app, ["memory", "import", str(write_jsonl(tmp_path / "in.jsonl", LINES))])
    stats = json.loads(runner.invoke(app, ["memory", "stats", "--json"]).stdout)
    assert (stats["messages"], stats["users"], stats["sessions"]) == (3, 2, 2)
    assert "messages: 3" in runner.invoke(app, ["memory", "stats"]).stdout
    out = tmp_path / "out.jsonl"
    assert runner.invoke(app, ["memory", "export", str(out)]).exit_code == 0
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in exported] == ["m1", "m2", "m3"]
    assert exported[0]["content"] == LINES[0]["content"]
    assert runner.invoke(app, ["memory", "import", str(out)]).stdout.startswith("imported 0 messages")


def test_an_export_that_cannot_be_written_is_one_line(runner: CliRunner, tmp_path: Path) -> None:
    a_file = write_jsonl(tmp_path / "in.jsonl", LINES)
    result = runner.invoke(app, ["memory", "export", str(a_file / "out.jsonl")])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert result.stderr == f"temper: cannot write {a_file / 'out.jsonl'}: Not a directory\n"


def test_missing_file_and_bad_role_are_clear_errors(runner: CliRunner, tmp_path: Path) -> None:
    missing = runner.invoke(app, ["memory", "import", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2 and "no such file" in missing.stderr
    bad_role = runner.invoke(app, ["memory", "search", "x", "--role", "boss"])
    assert bad_role.exit_code == 2 and "role must be one of" in bad_role.stderr
