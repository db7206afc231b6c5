"""`temper tasks from-episodes`: the day's episodes as task folders that `temper tasks check` passes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from connectors.cli import app
from memory import MemoryStore
from tests.cli_config import use_config
from tests.learner.test_episode_tasks import record_episode


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data_dir = use_config(tmp_path, monkeypatch, '[sandbox]\nbackend = "bwrap"\n')
    data_dir.mkdir()
    return data_dir


def test_from_episodes_writes_folders_that_tasks_check_passes(data_dir: Path, tmp_path: Path) -> None:
    with MemoryStore.open(data_dir / "temper.db") as store:
        solved = asyncio.run(
            record_episode(store, data_dir, ["sort -r notes.txt > sorted.txt", "wc -l < sorted.txt"])
        )
        asyncio.run(record_episode(store, data_dir, ["cp notes.txt copy.txt"], reward=0.0))
        asyncio.run(record_episode(store, data_dir, ["date +%s%N > t.txt"]))
    out = tmp_path / "tasks"

    made = CliRunner().invoke(app, ["tasks", "from-episodes", "--since", "1h", "--out", str(out)])
    assert made.exit_code == 0, made.output
    assert (
        "1 of the day's 3 episodes became tasks; excluded: 1 failed, 1 were nondeterministic" in made.stdout
    )
    assert sorted(path.name for path in out.iterdir()) == [f"ep{solved}"]
    folder = out / f"ep{solved}"
    assert {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()} == {
        "instruction.md", "task.toml", "environment/Dockerfile", "environment/.dockerignore",
        "environment/notes.txt", "environment/src/tool.sh", "solution/solve.sh", "tests/test.sh",
    }  # fmt: skip

    checked = CliRunner().invoke(app, ["tasks", "check", str(out)])
    assert checked.exit_code == 0, checked.output
    assert "1 sound, 0 unsound, 0 not told" in checked.stdout

    by_date = CliRunner().invoke(app, ["tasks", "from-episodes", "--since", "2000-01-01", "--out", str(out)])
    assert by_date.exit_code == 0 and "of the day's 3 episodes" in by_date.stdout
