"""`temper executor status|versions|rollback` over a real version store in a temp data dir."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from connectors.cli import app
from learner.promote import promote
from learner.versions import ExecutorVersions, VersionMeta
from tests.cli_config import use_config

GATE = {
    "promote": True, "pairs": 40, "mean_current": 0.3, "mean_candidate": 0.55, "mean_diff": 0.25,
    "ci_low": 0.1, "ci_high": 0.4, "confidence": 0.95, "parse_failures": [2, 1], "timeouts": [0, 0],
    "reasons": [],
}  # fmt: skip


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_config(tmp_path, monkeypatch)


def adapter(directory: Path) -> Path:
    """The two files of a PEFT adapter: the CLI reads meta.json only, never the weights."""
    directory.mkdir(parents=True)
    (directory / "adapter_config.json").write_text('{"peft_type": "LORA"}')
    (directory / "adapter_model.safetensors").write_bytes(b"\0" * 16)
    return directory


def promote_two(data_dir: Path, tmp_path: Path) -> None:
    versions = ExecutorVersions(data_dir)
    first = VersionMeta("/models/tiny", "sha256:" + "ab" * 32, training={"episodes": 64})
    promote(versions, adapter(tmp_path / "a"), first)
    second = VersionMeta(
        "/models/tiny", "sha256:" + "ab" * 32, parent="v1", gate=GATE, training={"episodes": 96}
    )
    promote(versions, adapter(tmp_path / "b"), second)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["executor", *args])
    return result.exit_code, result.stdout, result.stderr


def test_status_before_any_version(data_dir: Path) -> None:
    code, out, _ = run("status")
    assert code == 0 and out.startswith("no executor version yet: the executor runs its base model")
    assert run("status", "--json")[1].strip() == "null"
    assert run("versions")[1] == "no executor versions yet\n"


def test_status_shows_the_current_version_and_its_meta(data_dir: Path, tmp_path: Path) -> None:
    promote_two(data_dir, tmp_path)
    code, out, _ = run("status")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"current: v2  ({data_dir / 'executor' / 'versions' / 'v2'})"
    assert "base model: /models/tiny  sha256:abababababab" in lines
    assert "parent: v1" in lines
    assert "gate: 0.30 -> 0.55 on 40 pairs, diff +0.25 [+0.10, +0.40]" in lines
    assert lines[-1] == "training episodes: 96"
    data = json.loads(run("status", "--json")[1])
    assert data["name"] == "v2" and data["gate"]["pairs"] == 40 and data["created_at"] > 0


def test_versions_lists_them_oldest_first_marking_the_current(data_dir: Path, tmp_path: Path) -> None:
    promote_two(data_dir, tmp_path)
    code, out, _ = run("versions")
    rows = out.splitlines()[1:]
    assert code == 0 and len(rows) == 2
    assert rows[0].startswith("  v1") and "base" in rows[0] and "none (promoted without a gate)" in rows[0]
    assert rows[1].startswith("* v2") and "v1" in rows[1] and "diff +0.25" in rows[1]
    listed = json.loads(run("versions", "--json")[1])
    assert [(v["name"], v["current"]) for v in listed] == [("v1", False), ("v2", True)]


def test_rollback_moves_the_pointer_and_says_how_the_daemon_picks_it_up(
    data_dir: Path, tmp_path: Path
) -> None:
    promote_two(data_dir, tmp_path)
    code, out, _ = run("rollback")
    assert code == 0
    assert out.splitlines()[0] == "rolled back: v2 -> v1 (v2 stays on disk)"
    assert "A running daemon switches to v1 within seconds, without a restart" in out
    assert (data_dir / "executor" / "current").read_text() == "v1\n"
    assert run("status")[1].startswith("current: v1")

    code, out, err = run("rollback")
    assert code == 1 and out == ""
    assert err == (
        "temper: v1 is the first executor version (trained on the base model): "
        "there is no earlier version to roll back to\n"
    )


def test_rollback_with_no_versions_refuses(data_dir: Path) -> None:
    code, _, err = run("rollback")
    assert code == 1 and "no executor version has been promoted yet" in err
