"""What every `temper` command shares: the global options and the config they select.

`connectors.cli` stores a ``CliState`` in ``ctx.obj``; commands (and sub-apps such as
``temper memory``) call ``get_config(ctx)``, which loads the config once per invocation and turns
a ``ConfigError`` into its problem lines on stderr and exit code 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:  # pydantic and the models cost ~0.1 s: loaded on first use, not for --help
    from connectors.config import Config, ConfigError

CONFIG_ERROR_EXIT = 2


@dataclass
class CliState:
    """The global options of one invocation, and the config once loaded."""

    config_path: Path | None = None
    secrets_path: Path | None = None
    config: Config | None = None


def get_state(ctx: typer.Context) -> CliState:
    """This invocation's state (a default one when a sub-app runs on its own, as in tests)."""
    return ctx.ensure_object(CliState)


def get_config(ctx: typer.Context) -> Config:
    """The validated config; on a config error, print each problem and exit with code 2."""
    from connectors.config import ConfigError, load_config

    state = get_state(ctx)
    if state.config is None:
        try:
            state.config = load_config(state.config_path, secrets_path=state.secrets_path)
        except ConfigError as exc:
            report_config_error(exc)
            raise typer.Exit(CONFIG_ERROR_EXIT) from None
    return state.config


def report_config_error(exc: ConfigError) -> None:
    typer.echo("temper: the configuration has problems:", err=True)
    for problem in exc.problems:
        typer.echo(f"  {problem}", err=True)
