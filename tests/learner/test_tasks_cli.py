"""`temper tasks import|check`: the command shapes scripts rely on, in a local sandbox."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from connectors.cli import app
from tests.cli_config import use_config

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tbench"


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_config(tmp_path, monkeypatch, '[sandbox]\nbackend = "local"\n')


def rows(output: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split()[1:] for line in output.splitlines() if line[:1].isalpha()}


def test_check_reports_each_task_and_fails_on_an_unsound_one(data_dir: Path) -> None:
    result = CliRunner().invoke(app, ["tasks", "check", str(FIXTURES)])
    assert result.exit_code == 1, result.output
    table = rows(result.stdout)
    assert table["count-fruits"][:4] == ["passes", "fails", "yes", table["count-fruits"][3]]
    assert float(table["count-fruits"][3]) < 10
    assert table["wrong-solution"][:3] == ["FAILS", "fails", "NO"]
    assert "wrong-solution: the reference failed:" in result.stdout
    assert "1 sound, 1 unsound, 0 not told" in result.stdout
    assert "NO isolation" in result.stderr  # the local backend says what it is


def test_check_passes_when_every_task_is_sound(data_dir: Path, tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "count-fruits", tmp_path / "good" / "count-fruits")
    result = CliRunner().invoke(app, ["tasks", "check", str(tmp_path / "good")])
    assert result.exit_code == 0, result.output
    assert "1 sound, 0 unsound" in result.stdout


def test_import_copies_tasks_into_the_data_dir_and_check_defaults_to_them(data_dir: Path) -> None:
    result = CliRunner().invoke(app, ["tasks", "import", str(FIXTURES)])
    assert result.exit_code == 0, result.output
    assert rows(result.stdout)["count-fruits"][:3] == ["file-operations", "1", "yes"]
    assert "imported 2 tasks into" in result.stdout
    assert (data_dir / "tasks" / "count-fruits" / "solution" / "solve.sh").is_file()
    again = CliRunner().invoke(app, ["tasks", "import", str(FIXTURES / "count-fruits")])
    assert again.exit_code == 0 and "imported 1 tasks" in again.stdout
    checked = CliRunner().invoke(app, ["tasks", "check"])
    assert checked.exit_code == 1 and set(rows(checked.stdout)) >= {"count-fruits", "wrong-solution"}


def test_a_missing_directory_is_a_clear_error(data_dir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["tasks", "check", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "is not a directory" in result.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(app, ["tasks", "import", str(empty)])
    assert result.exit_code == 1 and "imported 0 tasks" in result.stdout
