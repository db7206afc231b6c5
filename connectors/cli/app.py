"""The `temper` command: global options and thin commands over the packages.

Start-up must stay fast (`temper --help` well under 0.5 s), so nothing heavy is imported at
module level on this path: litellm, torch, transformers, docker, telegram, slack, httpx, and
even pydantic and the config models, are imported inside the commands that use them. Commands
get the config through ``connectors.cli.context.get_config(ctx)``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from connectors.cli import daemon, executor, learn, memory, serve, skills, tasks, trajectories, users
from connectors.cli.chat import chat
from connectors.cli.context import CliState, get_config, get_state
from connectors.cli.quickstart import quickstart

app = typer.Typer(
    name="temper",
    help="A persistent, self-improving agent runtime.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals can hold secrets
)
app.add_typer(memory.app, name="memory")
app.add_typer(users.app, name="users")
app.add_typer(skills.app, name="skills")
app.add_typer(serve.app, name="serve")
app.add_typer(trajectories.app, name="trajectories")
app.add_typer(tasks.app, name="tasks")
app.add_typer(executor.app, name="executor")
app.command()(chat)
app.command()(quickstart)
app.add_typer(learn.app, name="learn")
app.add_typer(daemon.app, name="daemon")
app.add_typer(daemon.pairing_app, name="pairing")
app.command("status")(daemon.status)

STATUS_COLOURS = {"ok": typer.colors.GREEN, "warn": typer.colors.YELLOW, "fail": typer.colors.RED}


@app.callback()
def main(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="Config file (default: $TEMPER_CONFIG, else config.toml in the user config dir).",
            dir_okay=False,
        ),
    ] = None,
    secrets: Annotated[
        Path | None,
        typer.Option(
            "--secrets",
            help="Secrets file (default: $TEMPER_SECRETS, else secrets.toml beside the config).",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """A persistent, self-improving agent runtime."""
    ctx.obj = CliState(config_path=config, secrets_path=secrets)


@app.command()
def init(
    ctx: typer.Context,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing config (kept as .bak).")
    ] = False,
) -> None:
    """Write a commented default config and a private secrets file, and create the data dir."""
    from connectors.config import (
        default_config_text,
        default_secrets_text,
        resolve_config_path,
        resolve_secrets_path,
    )

    state = get_state(ctx)
    config_file = resolve_config_path(state.config_path)
    if config_file.exists() and not force:
        typer.echo(f"config:  {config_file} exists, left as it is (--force replaces it)")
    else:
        config_file.parent.mkdir(parents=True, exist_ok=True)
        if config_file.exists():
            config_file.replace(config_file.with_name(config_file.name + ".bak"))
        config_file.write_text(default_config_text(), encoding="utf-8")
        typer.echo(f"config:  wrote {config_file}")

    secrets_file = resolve_secrets_path(state.secrets_path, config_file, os.environ)
    if secrets_file.exists():
        typer.echo(f"secrets: {secrets_file} exists, left as it is")
    else:
        _write_private(secrets_file, default_secrets_text())
        typer.echo(f"secrets: wrote {secrets_file} (readable by you only)")

    data_dir = get_config(ctx).data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    typer.echo(f"data:    {data_dir}")
    typer.echo("next:    set your model's API key (e.g. OPENAI_API_KEY), then run `temper doctor`")


def _write_private(path: Path, text: str) -> None:
    """Create ``path`` with mode 600 from the start, so a secret is never briefly readable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text)


@app.command()
def doctor(ctx: typer.Context) -> None:
    """Check the config, data dir, database, sandboxes, model endpoints and optional extras."""
    import asyncio

    from connectors.cli import doctor as checkup

    state = get_state(ctx)
    results = asyncio.run(checkup.run_doctor(state.config_path, state.secrets_path, os.environ))
    for result in results:
        status = typer.style(f"{result.status.value:<4}", fg=STATUS_COLOURS[result.status.value])
        typer.echo(f"{status}  {result.name}: {result.detail}")
    raise typer.Exit(checkup.exit_code(results))
