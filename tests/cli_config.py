"""A CLI test's own configuration: a config.toml in the test's directory that the CLI finds
through TEMPER_CONFIG, with no TEMPER_* variable from outside and no user config beside it.

    data_dir = use_config(tmp_path, monkeypatch, '[sandbox]\\nbackend = "local"\\n')
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def use_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tables: str = "", *, data_dir: Path | None = None
) -> Path:
    """Write `tmp_path/config.toml` (`data_dir`, default `tmp_path/data`, then `tables`), point
    the CLI at it and clear the environment of other TEMPER_* settings; returns the data dir."""
    for name in [name for name in os.environ if name.startswith("TEMPER_")]:
        monkeypatch.delenv(name)
    data_dir = data_dir or tmp_path / "data"
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{data_dir}"\n\n{tables}')
    monkeypatch.setenv("TEMPER_CONFIG", str(config))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    return data_dir
