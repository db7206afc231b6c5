"""`temper executor status|versions|rollback`: the executor's adapter versions (learner/versions.py).

    temper executor status [--json]     the current version and its meta.json
    temper executor versions [--json]   every version, oldest first; * marks the current one
    temper executor rollback            point `current` back at the current version's parent

Rollback moves the pointer; a running daemon reads it every few seconds and switches its executor
without a restart (connectors/daemon/service.py), turns in flight finishing on their version.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from connectors.cli.context import get_config

if TYPE_CHECKING:
    from learner.versions import ExecutorVersions, Version

app = typer.Typer(
    help="The executor's trained adapter versions: status, list, rollback.", no_args_is_help=True
)

AsJson = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _versions(ctx: typer.Context) -> ExecutorVersions:
    from learner.versions import ExecutorVersions

    return ExecutorVersions(get_config(ctx).data_dir)


@app.command()
def status(ctx: typer.Context, as_json: AsJson = False) -> None:
    """The current executor version: when it was made, from what, and the gate's numbers."""
    from learner.versions import VersionError

    versions = _versions(ctx)
    try:
        current = versions.current()
    except VersionError as error:
        _fail(error)
    if as_json:
        typer.echo(json.dumps(None if current is None else _as_json(current), indent=1))
        return
    if current is None:
        typer.echo(
            "no executor version yet: the executor runs its base model (a learning cycle promotes one)"
        )
        return
    meta = current.meta
    typer.echo(f"current: {current.name}  ({current.directory})")
    typer.echo(f"created: {_time(meta.created_at)}")
    typer.echo(f"base model: {meta.base_model}  {meta.base_model_hash[:19]}")
    typer.echo(f"parent: {meta.parent or 'the base model'}")
    typer.echo(f"gate: {_gate_line(meta.gate)}")
    for name, value in meta.training.items():
        typer.echo(f"training {name}: {value}")


@app.command("versions")
def list_versions(ctx: typer.Context, as_json: AsJson = False) -> None:
    """Every executor version, oldest first; `*` marks the current one."""
    from learner.versions import VersionError

    versions = _versions(ctx)
    try:
        found, current = versions.list_versions(), versions.current_name()
    except VersionError as error:
        _fail(error)
    if as_json:
        typer.echo(json.dumps([{**_as_json(v), "current": v.name == current} for v in found], indent=1))
        return
    if not found:
        typer.echo("no executor versions yet")
        return
    typer.echo(f"  {'version':<8}  {'created (UTC)':<16}  {'parent':<8}  gate")
    for version in found:
        mark = "*" if version.name == current else " "
        created = _time(version.meta.created_at)[:16]
        parent = version.meta.parent or "base"
        typer.echo(f"{mark} {version.name:<8}  {created:<16}  {parent:<8}  {_gate_line(version.meta.gate)}")


@app.command()
def rollback(ctx: typer.Context) -> None:
    """Point the executor back at the current version's parent (the version before it)."""
    from learner.promote import rollback as roll_back
    from learner.versions import VersionError

    versions = _versions(ctx)
    try:
        left = versions.current_name()
        previous = roll_back(versions)
    except VersionError as error:
        _fail(error)
    typer.echo(f"rolled back: {left} -> {previous.name} ({left} stays on disk)")
    typer.echo(
        f"A running daemon switches to {previous.name} within seconds, without a restart "
        f"(`temper status` shows the version it serves); turns in flight finish on {left}."
    )


def _fail(error: Exception) -> NoReturn:
    typer.echo(f"temper: {error}", err=True)
    raise typer.Exit(1)


def _as_json(version: Version) -> dict[str, Any]:
    from dataclasses import asdict

    return {"name": version.name, "directory": str(version.directory), **asdict(version.meta)}


def _gate_line(gate: dict[str, Any] | None) -> str:
    if not gate:
        return "none (promoted without a gate)"
    return (
        f"{gate['mean_current']:.2f} -> {gate['mean_candidate']:.2f} on {gate['pairs']} pairs, "
        f"diff {gate['mean_diff']:+.2f} [{gate['ci_low']:+.2f}, {gate['ci_high']:+.2f}]"
    )


def _time(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M:%S") if ts else "-"
