"""connectors.cli: start-up weight, `temper init`, and how commands get (or reject) the config."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from connectors.cli import app
from connectors.config import Config, default_config_text, load_config

HEAVY = [
    "litellm",
    "torch",
    "transformers",
    "peft",
    "docker",
    "telegram",
    "slack_bolt",
    "slack_sdk",
]


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Platform dirs inside tmp_path, and no TEMPER_* settings leaking in from the caller."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    for name in [name for name in os.environ if name.startswith("TEMPER_")]:
        monkeypatch.delenv(name)
    return {
        "config": tmp_path / "xdg-config" / "temper" / "config.toml",
        "secrets": tmp_path / "xdg-config" / "temper" / "secrets.toml",
        "data": tmp_path / "xdg-data" / "temper",
    }


def test_importing_the_cli_loads_nothing_heavy() -> None:
    code = f"import json, sys, connectors.cli; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert json.loads(done.stdout) == []


def test_help_lists_the_commands_and_global_options() -> None:
    result = CliRunner().invoke(app, ["--help"])

    assert result.exit_code == 0
    for word in ("init", "doctor", "memory", "--config", "--secrets"):
        assert word in result.output


def test_init_writes_config_secrets_and_data_dir(dirs: dict[str, Path]) -> None:
    result = CliRunner().invoke(app, ["init"])

    assert result.exit_code == 0, result.output
    assert dirs["config"].read_text() == default_config_text()
    assert stat.S_IMODE(dirs["secrets"].stat().st_mode) == 0o600
    assert dirs["data"].is_dir()
    for path in dirs.values():
        assert str(path) in result.output
    assert load_config() == Config()  # what init wrote loads, secrets file included


def test_init_never_overwrites_without_force(dirs: dict[str, Path]) -> None:
    mine = '[sandbox]\nbackend = "local"\n'
    dirs["config"].parent.mkdir(parents=True)
    dirs["config"].write_text(mine)

    result = CliRunner().invoke(app, ["init"])

    assert result.exit_code == 0, result.output
    assert dirs["config"].read_text() == mine
    assert "exists" in result.output and "--force" in result.output
    assert dirs["data"].is_dir()

    forced = CliRunner().invoke(app, ["init", "--force"])

    assert forced.exit_code == 0, forced.output
    assert dirs["config"].read_text() == default_config_text()
    assert dirs["config"].with_name("config.toml.bak").read_text() == mine


def test_init_keeps_an_existing_secrets_file_even_with_force(dirs: dict[str, Path]) -> None:
    dirs["secrets"].parent.mkdir(parents=True)
    dirs["secrets"].write_text('[telegram]\nbot_token = "keep-me-please-1234"\n')
    dirs["secrets"].chmod(0o600)

    result = CliRunner().invoke(app, ["init", "--force"])

    assert result.exit_code == 0, result.output
    assert "keep-me-please-1234" in dirs["secrets"].read_text()
    assert "keep-me-please-1234" not in result.output


def test_init_honours_the_config_option(dirs: dict[str, Path], tmp_path: Path) -> None:
    config_file = tmp_path / "custom" / "temper.toml"

    result = CliRunner().invoke(app, ["--config", str(config_file), "init"])

    assert result.exit_code == 0, result.output
    assert config_file.read_text() == default_config_text()
    assert (tmp_path / "custom" / "secrets.toml").exists()
    assert not dirs["config"].exists()


def test_a_broken_config_stops_a_command_with_its_problems(dirs: dict[str, Path], tmp_path: Path) -> None:
    config_file = tmp_path / "bad.toml"
    config_file.write_text("[memroy]\n")

    result = CliRunner().invoke(app, ["--config", str(config_file), "init"])

    assert result.exit_code == 2
    assert "unknown key 'memroy' (did you mean 'memory'?)" in result.stderr
    assert config_file.read_text() == "[memroy]\n"


@pytest.mark.parametrize("below", [False, True])
def test_quickstart_refuses_a_dir_it_cannot_make_before_building_anything(
    dirs: dict[str, Path], tmp_path: Path, below: bool
) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep\n")
    where = a_file / "run" if below else a_file

    result = CliRunner(env={"COLUMNS": "1000"}).invoke(app, ["quickstart", "--quick", "--dir", str(where)])

    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    said = result.stderr  # one line: the error box is as wide as COLUMNS
    assert (f"cannot make the directory {where}: Not a directory" if below else f"{where} is a file") in said
    assert a_file.read_text() == "keep\n" and not dirs["data"].exists()
