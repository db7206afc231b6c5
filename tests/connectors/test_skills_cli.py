"""`temper skills ...`: the command shapes other tools script against."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from connectors.cli import app
from tests.cli_config import use_config
from tests.skills.folders import BAD, GOOD, write_tree


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """The CLI on a config whose data dir is in tmp_path."""
    use_config(tmp_path, monkeypatch)
    return CliRunner()


def test_import_prints_a_line_per_skill_and_the_totals(runner: CliRunner, tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "incoming")
    result = runner.invoke(app, ["skills", "import", str(tree)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert sum(line.startswith("imported ") for line in lines) == len(GOOD)
    refused = [line for line in lines if line.startswith("refused ")]
    assert sorted(line.split()[1] for line in refused) == sorted(BAD)
    assert any("refused sneaky" in line and "model-instructions" in line for line in refused)
    assert lines[-1] == f"imported: {len(GOOD)} refused: {len(BAD)}"
    assert any("moved under metadata: version, author, tags, platforms" in line for line in lines)


def test_list_json_search_approve_and_show(runner: CliRunner, tmp_path: Path) -> None:
    runner.invoke(app, ["skills", "import", str(write_tree(tmp_path / "incoming"))])
    listed = json.loads(runner.invoke(app, ["skills", "list", "--json"]).output)
    assert sorted(record["name"] for record in listed) == sorted(GOOD)
    assert {record["trust"] for record in listed} == {"untrusted"}
    assert {"name", "description", "trust", "uses", "success_rate"} <= set(listed[0])
    assert listed[0]["uses"] == 0 and listed[0]["success_rate"] is None
    found = runner.invoke(app, ["skills", "search", "fill a pdf form", "--json"])
    assert json.loads(found.output)[0]["name"] == "pdf-forms"
    assert runner.invoke(app, ["skills", "approve", "pdf-forms"]).output.startswith("approved pdf-forms")
    listed = {r["name"]: r for r in json.loads(runner.invoke(app, ["skills", "list", "--json"]).output)}
    assert listed["pdf-forms"]["trust"] == "trusted"
    shown = runner.invoke(app, ["skills", "show", "pdf-forms"])
    assert "name: pdf-forms" in shown.output and "trust: trusted" in shown.output
    assert runner.invoke(app, ["skills", "show", "pdf-forms", "--file", "forms.md"]).output.startswith(
        "# Field"
    )
    history = runner.invoke(app, ["skills", "show", "pdf-forms", "--history"]).output
    assert "imported from" in history and "approved by the operator" in history


def test_archive_restore_remove_and_stats(runner: CliRunner, tmp_path: Path) -> None:
    runner.invoke(app, ["skills", "import", str(write_tree(tmp_path / "incoming") / "claude")])
    assert runner.invoke(app, ["skills", "archive", "commit-messages"]).exit_code == 0
    assert json.loads(runner.invoke(app, ["skills", "list", "--json"]).output) == []
    assert runner.invoke(app, ["skills", "list", "--archived"]).output.split() == ["commit-messages"]
    missing = runner.invoke(app, ["skills", "show", "commit-messages"])
    assert missing.exit_code == 1 and "archived: restore it first" in missing.output
    assert runner.invoke(app, ["skills", "restore", "commit-messages"]).exit_code == 0
    stats = json.loads(runner.invoke(app, ["skills", "stats", "--json"]).output)
    assert stats[0]["name"] == "commit-messages" and stats[0]["uses"] == 0 and stats[0]["state"] == "ok"
    assert runner.invoke(app, ["skills", "remove", "commit-messages", "--yes"]).exit_code == 0
    assert runner.invoke(app, ["skills", "list"]).output.startswith("no skills yet")


def test_validate_reports_each_problem_and_exits_1(runner: CliRunner, tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "incoming")
    good = runner.invoke(app, ["skills", "validate", str(tree / "anthropic")])
    assert good.exit_code == 0 and good.output.splitlines() == [f"{tree / 'anthropic' / 'pdf-forms'}: valid"]
    bad = runner.invoke(app, ["skills", "validate", str(tree / "hermes")])
    assert bad.exit_code == 1
    assert "  error: name: 'Docker Cleanup' must be lowercase" in bad.output
    assert "  error: version: is not a field of the specification" in bad.output
    exfil = runner.invoke(app, ["skills", "validate", str(tree / "bad" / "exfil")])
    assert exfil.exit_code == 1 and "error: scripts/backup.sh:2: secrets" in exfil.output


def test_the_assembled_agent_has_the_library_its_tools_and_the_review(tmp_path: Path) -> None:
    from connectors.assembly import build_agent
    from connectors.config import load_config

    path = tmp_path / "config.toml"
    path.write_text(f'data_dir = "{tmp_path / "data"}"\n[sandbox]\nbackend = "local"\n')
    config = load_config(path, {"OPENAI_API_KEY": "sk-test-0123456789", "XDG_CONFIG_HOME": str(tmp_path)})
    assembled = build_agent(config, {"OPENAI_API_KEY": "sk-test-0123456789"})
    skills = assembled.agent.skills
    assert skills is not None and skills.library.root == tmp_path / "data" / "skills"
    assert {"skills_search", "skill_view", "skill_manage"} <= set(assembled.agent.toolbox.names)
    assembled.store.close()
    path.write_text(path.read_text() + "[skills]\nenabled = false\n")
    config = load_config(path, {"OPENAI_API_KEY": "sk-test-0123456789", "XDG_CONFIG_HOME": str(tmp_path)})
    assembled = build_agent(config, {"OPENAI_API_KEY": "sk-test-0123456789"})
    assert assembled.agent.skills is None and "skill_view" not in assembled.agent.toolbox.names
    assembled.store.close()
