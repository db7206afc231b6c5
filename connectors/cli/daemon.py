"""`temper daemon`, `temper daemon install`, `temper status` and `temper pairing ...`.

Thin commands: the daemon is connectors/daemon/service.py, the unit connectors/daemon/systemd.py, the report
connectors/daemon/status.py, pairing memory/access.py. Nothing heavy is imported until a
command runs (`temper --help` stays fast).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from connectors.cli.context import CONFIG_ERROR_EXIT, get_config, get_state
from connectors.cli.memory import open_store

app = typer.Typer(help="Run temper as a service: chat channels, the schedule, the status report.")
pairing_app = typer.Typer(
    help="Who may talk to temper: approve pairing codes, grant, revoke.", no_args_is_help=True
)


@app.callback(invoke_without_command=True)
def daemon(
    ctx: typer.Context,
    drain_timeout: Annotated[
        float | None,
        typer.Option(
            "--drain-timeout",
            help="Seconds to let turns in flight finish on the first signal (config: daemon.drain_timeout_s).",
            min=0,
        ),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            help="Turns answered at once, one per session (config: daemon.concurrency).",
            min=1,
        ),
    ] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="debug, info, warning or error.")] = "info",
) -> None:
    """Run the daemon: the enabled chat channels, the inbox, the schedule. The first SIGTERM or
    Ctrl-C drains and stops; a second one stops at once."""
    if ctx.invoked_subcommand is not None:
        return
    import asyncio
    import logging

    from connectors.daemon import Daemon, DaemonError, DaemonSettings
    from runtime import ModelError
    from runtime.executor.errors import ExecutorLoadError

    config = get_config(ctx)
    logging.basicConfig(
        level=log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    settings = DaemonSettings.from_config(config, drain_timeout_s=drain_timeout, concurrency=concurrency)
    try:
        code = asyncio.run(Daemon(config, settings=settings).serve())
    except DaemonError as error:
        typer.echo(f"temper: {error}", err=True)
        raise typer.Exit(1) from None
    except ModelError as error:  # no API key for the planner, a malformed model string
        typer.echo(f"temper: {error}", err=True)
        raise typer.Exit(CONFIG_ERROR_EXIT) from None
    except ExecutorLoadError as error:  # [executor] model_dir is not a model, a device torch does not see
        typer.echo(f"temper: the executor model cannot be loaded: {error}", err=True)
        raise typer.Exit(CONFIG_ERROR_EXIT) from None
    raise typer.Exit(code)


@app.command()
def install(
    ctx: typer.Context,
    system: Annotated[
        bool,
        typer.Option(
            "--system", help="A system service in /etc/systemd/system (run as root), not a user one."
        ),
    ] = False,
    user: Annotated[str, typer.Option("--user", help="The account a system service runs as.")] = "temper",
    unit_dir: Annotated[
        Path | None,
        typer.Option("--unit-dir", help="Write the unit here instead (packaging, review).", file_okay=False),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing unit.")] = False,
) -> None:
    """Write a systemd unit for the daemon and print the commands that enable it."""
    from connectors.config import resolve_config_path
    from connectors.daemon.systemd import (
        SYSTEM_CONFIG,
        SYSTEM_UNIT_DIR,
        UNIT_NAME,
        install_commands,
        render_unit,
    )

    if system:
        config_path, directory = SYSTEM_CONFIG, unit_dir or SYSTEM_UNIT_DIR
    else:
        config_path = resolve_config_path(get_state(ctx).config_path).absolute()
        directory = (
            unit_dir
            or Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "systemd" / "user"
        )
    unit_path = directory / UNIT_NAME
    if unit_path.exists() and not force:
        typer.echo(f"temper: {unit_path} exists; --force replaces it", err=True)
        raise typer.Exit(1)
    text = render_unit(exec_start=_temper_executable(), config_path=config_path, system=system, user=user)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        unit_path.write_text(text, encoding="utf-8")
    except PermissionError:
        typer.echo(
            f"temper: cannot write {unit_path}: permission denied (a system unit needs root)", err=True
        )
        raise typer.Exit(1) from None
    typer.echo(f"wrote {unit_path}")
    if system:
        typer.echo(f"config: {config_path} (set secrets in {config_path.parent / 'secrets.toml'}, mode 600)")
    typer.echo("then run:")
    for command in install_commands(unit_path, system=system, user=user):
        typer.echo(f"  {command}")


def _temper_executable() -> str:
    beside = Path(sys.executable).with_name("temper")
    return str(beside if beside.exists() else shutil.which("temper") or beside)


def status(
    ctx: typer.Context,
    as_json: Annotated[
        bool, typer.Option("--json", help="The daemon's report and the queue as JSON.")
    ] = False,
) -> None:
    """The daemon: its channels, the queue, the schedule's last and next runs, the executor."""
    from connectors.daemon.status import STATUS_FILE, read_report, render
    from connectors.nightly.progress import read_progress

    data_dir = get_config(ctx).data_dir
    report = read_report(data_dir / STATUS_FILE)
    with open_store(ctx) as store:
        depth = store.inbox.depth()
    if as_json:
        typer.echo(json.dumps({"report": report, "pending": depth.pending, "failed": depth.failed}, indent=1))
        return
    for line in render(report, depth.pending, depth.failed, learner=read_progress(data_dir)):
        typer.echo(line)


# --- pairing -------------------------------------------------------------------------------


@pairing_app.command("list")
def pairing_list(ctx: typer.Context) -> None:
    """Pending pairing codes, and the people let in by pairing or by `grant`."""
    from datetime import datetime

    with open_store(ctx) as store:
        codes, grants = store.access.pending_codes(), store.access.grants()
    typer.echo("pending codes:" if codes else "pending codes: none")
    for code in codes:
        name = f" ({code.user_name})" if code.user_name else ""
        expires = datetime.fromtimestamp(code.expires_at).strftime("%H:%M")
        typer.echo(f"  {code.display}  {code.platform}:{code.platform_user_id}{name}  expires {expires}")
    typer.echo("let in:" if grants else "let in: nobody yet (besides the allowlists in the config)")
    for grant in grants:
        name = f" ({grant.user_name})" if grant.user_name else ""
        when = datetime.fromtimestamp(grant.granted_at).strftime("%Y-%m-%d")
        typer.echo(f"  {grant.platform}:{grant.platform_user_id}{name}  by {grant.via} on {when}")


@pairing_app.command("approve")
def pairing_approve(
    ctx: typer.Context, code: Annotated[str, typer.Argument(help="The code, e.g. ABCD-EFGH.")]
) -> None:
    """Let in the person a pairing code was given to."""
    from memory import PairingError

    with open_store(ctx) as store:
        try:
            grant = store.access.approve(code)
        except PairingError as error:
            typer.echo(f"temper: {error}", err=True)
            raise typer.Exit(1) from None
    name = f" ({grant.user_name})" if grant.user_name else ""
    typer.echo(f"let in {grant.platform}:{grant.platform_user_id}{name}; their next message gets an answer")


@pairing_app.command("grant")
def pairing_grant(ctx: typer.Context, user: Annotated[str, typer.Argument(help="PLATFORM:USER_ID")]) -> None:
    """Let a person in without a code."""
    platform, user_id = _platform_user(user)
    with open_store(ctx) as store:
        store.access.grant(platform, user_id)
    typer.echo(f"let in {platform}:{user_id}")


@pairing_app.command("revoke")
def pairing_revoke(ctx: typer.Context, user: Annotated[str, typer.Argument(help="PLATFORM:USER_ID")]) -> None:
    """Withdraw a person's access (their memory stays theirs, unused); the config's allowlists
    are not touched: edit those in config.toml."""
    platform, user_id = _platform_user(user)
    with open_store(ctx) as store:
        revoked = store.access.revoke(platform, user_id)
    if not revoked:
        typer.echo(f"temper: {platform}:{user_id} was not let in by pairing or grant", err=True)
        raise typer.Exit(1)
    typer.echo(f"revoked {platform}:{user_id}")


def _platform_user(text: str) -> tuple[str, str]:
    platform, _, user_id = text.partition(":")
    if not platform or not user_id:
        typer.echo(
            f"temper: {text!r}: give PLATFORM:USER_ID, like telegram:123456789 or slack:U012AB3CD", err=True
        )
        raise typer.Exit(CONFIG_ERROR_EXIT)
    return platform, user_id
