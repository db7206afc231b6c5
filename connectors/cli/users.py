"""`temper users ...`: the people temper knows, what it holds about each, linking and forgetting.

  temper users list [--json]                 every user: identities, messages, facts, last seen
  temper users show USER [--history] [--json]  one user: identities and what temper knows
  temper users export USER FILE              everything about USER as JSON Lines (FILE may be -)
  temper users forget USER [--yes]           delete all of it, down to the database file's bytes
  temper users link USER OTHER               OTHER (an identity or a user) joins USER
  temper users unlink IDENTITY               split an identity off into a user of its own
  temper users requests [--all] [--json]     in-chat links waiting for approval ([users] link_approval)
  temper users approve ID / deny ID          link the request's account as /link would have, or not

USER is an identity (`telegram:12345`, `slack:U0AB`, `cli:ana`), a handle, or `#<user id>`.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from connectors.cli.context import get_config
from connectors.cli.memory import open_store
from connectors.cli.output import export_target

if TYPE_CHECKING:
    from memory import LinkError, MemoryStore, MoveReport, UserSummary

app = typer.Typer(help="The people temper knows: show, export, link and forget them.", no_args_is_help=True)

UserArg = Annotated[str, typer.Argument(help="An identity like telegram:12345, a handle, or #<user id>.")]
_SNAPSHOT_ID = re.compile(r"[0-9a-f]{64}")


def _resolve(store: MemoryStore, name: str) -> int:
    from memory import UnknownRecordError

    try:
        return store.users.resolve(name)
    except UnknownRecordError as error:
        typer.echo(f"temper: {error}", err=True)
        raise typer.Exit(2) from None


def _day(ts: float | None) -> str:
    return "-" if ts is None else datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M")


def _summary_json(user: UserSummary) -> dict[str, object]:
    return {
        "id": user.id,
        "handle": user.handle,
        "display_name": user.display_name,
        "identities": [str(identity) for identity in user.identities],
        "sessions": user.sessions,
        "messages": user.messages,
        "facts": user.facts,
        "episodes": user.episodes,
        "last_seen": user.last_seen,
    }


@app.command("list")
def list_(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array.")] = False,
) -> None:
    """Every user, with their identities and how much temper holds about them."""
    with open_store(ctx) as store:
        users = store.users.all()
    if as_json:
        typer.echo(json.dumps([_summary_json(user) for user in users], ensure_ascii=False, indent=2))
        return
    if not users:
        typer.echo("no users yet")
        return
    for user in users:
        names = ", ".join(str(identity) for identity in user.identities) or "(no identity: imported)"
        typer.echo(
            f"#{user.id}  {user.handle}  [{names}]  {user.messages} messages, {user.facts} facts,"
            f" last seen {_day(user.last_seen)}"
        )


@app.command()
def show(
    ctx: typer.Context,
    user: UserArg,
    history: Annotated[bool, typer.Option("--history", help="Also superseded facts.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """A user's identities and the facts temper knows about them."""
    with open_store(ctx) as store:
        user_id = _resolve(store, user)
        summary = store.users.get(user_id)
        facts = store.facts.for_user(user_id, include_history=history)
    if as_json:
        record = _summary_json(summary)
        record["facts"] = [
            {
                "id": fact.id,
                "statement": fact.statement,
                "kind": fact.kind,
                "confidence": fact.confidence,
                "mentions": fact.mentions,
                "sources": list(fact.sources),
                "updated_at": fact.updated_at,
                "superseded_by": fact.superseded_by,
                "supersedes": fact.supersedes,
            }
            for fact in facts
        ]
        typer.echo(json.dumps(record, ensure_ascii=False, indent=2))
        return
    typer.echo(
        f"#{summary.id}  {summary.handle}" + (f"  ({summary.display_name})" if summary.display_name else "")
    )
    typer.echo("identities: " + (", ".join(str(i) for i in summary.identities) or "none"))
    typer.echo(
        f"holds: {summary.sessions} sessions, {summary.messages} messages, {summary.episodes} episodes;"
        f" last seen {_day(summary.last_seen)}"
    )
    if not facts:
        typer.echo("facts: none yet")
        return
    typer.echo("facts:")
    for fact in facts:
        old = f"  (replaced by #{fact.superseded_by})" if fact.superseded_by is not None else ""
        typer.echo(
            f"  #{fact.id} [{fact.kind}] {fact.statement}  (confidence {fact.confidence:.2f},"
            f" said {fact.mentions}x, {_day(fact.updated_at)}){old}"
        )


@app.command()
def export(
    ctx: typer.Context,
    user: UserArg,
    file: Annotated[str, typer.Argument(help="Where to write the JSON Lines; - for stdout.")],
) -> None:
    """Everything temper holds about USER, as JSON Lines (see docs/users.md for the records)."""
    with open_store(ctx) as store:
        user_id = _resolve(store, user)
        with export_target(file) as out:
            counts = store.users.export(user_id, out)
    lines = sum(counts.values())
    detail = ", ".join(f"{count} {kind}" for kind, count in counts.items())
    typer.echo(f"exported {lines} records ({detail})", err=file == "-")


@app.command()
def forget(
    ctx: typer.Context,
    user: UserArg,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete everything temper holds about USER, and scrub it from the database files."""
    config = get_config(ctx)
    with open_store(ctx) as store:
        user_id = _resolve(store, user)
        summary = store.users.get(user_id)
        if not yes:
            names = ", ".join(str(i) for i in summary.identities) or summary.handle
            typer.confirm(
                f"Forget {summary.handle} ({names}): {summary.messages} messages, {summary.facts} facts,"
                f" {summary.episodes} episodes, and their pairing? This cannot be undone.",
                abort=True,
            )
        report = store.users.forget(user_id)
    removed = _remove_snapshots(config.data_dir / "snapshots", report.snapshot_ids)
    detail = ", ".join(f"{count} {table}" for table, count in sorted(report.deleted.items()))
    typer.echo(f"forgot {report.handle}: {detail or 'nothing stored'}")
    typer.echo(f"workspace snapshots removed: {removed}")
    if report.checkpointed:
        typer.echo(f"database scrubbed: {report.database_bytes} bytes, WAL {report.wal_bytes} bytes")
    else:
        typer.echo(
            "warning: another process (the daemon?) was reading the database, so the WAL still holds"
            " old pages; run `temper memory maintain` once it is stopped to finish the scrub",
            err=True,
        )


def _remove_snapshots(directory: Path, snapshot_ids: tuple[str, ...]) -> int:
    removed = 0
    for snapshot_id in snapshot_ids:
        if not _SNAPSHOT_ID.fullmatch(snapshot_id):  # ids are sha256 hex: nothing else is a path here
            continue
        path = directory / f"{snapshot_id}.tar"
        if path.is_file():
            path.unlink()
            removed += 1
    return removed


@app.command()
def link(
    ctx: typer.Context,
    user: UserArg,
    other: Annotated[
        str,
        typer.Argument(help="An identity (platform:id, known or not yet) or another user, who joins USER."),
    ],
) -> None:
    """Join OTHER to USER: one person, sharing facts and recall; OTHER's past comes along."""
    from memory import UnknownRecordError

    with open_store(ctx) as store:
        user_id = _resolve(store, user)
        platform, _, platform_user_id = other.partition(":")
        known_identity = (
            bool(platform_user_id) and store.user_for_identity(platform, platform_user_id) is not None
        )
        if known_identity or (platform_user_id and store.user_id(other) is None):
            report = store.links.link(user_id, platform, platform_user_id)
        else:
            try:
                other_id = store.users.resolve(other)
            except UnknownRecordError as error:
                typer.echo(f"temper: {error}", err=True)
                raise typer.Exit(2) from None
            report = store.links.merge(user_id, other_id)
        handle = store.user_handle(user_id)
    typer.echo(f"linked {other} to {handle}: {_moved(report)}")


@app.command()
def unlink(
    ctx: typer.Context,
    identity: Annotated[str, typer.Argument(help="The identity to split off, like slack:U0AB.")],
) -> None:
    """Split IDENTITY off its user into a user of its own, with what came from it."""
    from memory import LinkError

    platform, _, platform_user_id = identity.partition(":")
    if not platform_user_id:
        typer.echo("temper: give an identity as platform:id, like telegram:12345", err=True)
        raise typer.Exit(2)
    with open_store(ctx) as store:
        try:
            report = store.links.unlink(platform, platform_user_id)
        except LinkError as error:
            typer.echo(f"temper: {error}", err=True)
            raise typer.Exit(2) from None
        handle = store.user_handle(report.user_id)
    typer.echo(f"unlinked {identity} into {handle} (#{report.user_id}): {_moved(report)}")


def _moved(report: MoveReport) -> str:
    moved = ", ".join(f"{count} {table}" for table, count in sorted(report.moved.items()))
    return f"moved {moved}" if moved else "nothing to move"


@app.command()
def requests(
    ctx: typer.Context,
    include_closed: Annotated[
        bool, typer.Option("--all", help="Also approved, denied and expired requests.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array.")] = False,
) -> None:
    """In-chat link requests waiting for your approval (with [users] link_approval = "operator")."""
    with open_store(ctx) as store:
        found = store.links.requests(include_closed=include_closed)
    if as_json:
        records = [
            {
                "id": request.id,
                "identity": request.identity,
                "display_name": request.display_name,
                "user_id": request.user_id,
                "user": request.user_handle,
                "created_at": request.created_at,
                "expires_at": request.expires_at,
                "state": request.state(),
            }
            for request in found
        ]
        typer.echo(json.dumps(records, ensure_ascii=False, indent=2))
        return
    if not found:
        typer.echo("no link requests waiting" if not include_closed else "no link requests")
        return
    for request in found:
        name = f" ({request.display_name})" if request.display_name else ""
        typer.echo(
            f"#{request.id}  {request.identity}{name} asks to join {request.user_handle} (#{request.user_id}),"
            f" asked {_day(request.created_at)}, {request.state()} (open until {_day(request.expires_at)})"
        )
    if any(request.state() == "pending" for request in found):
        typer.echo("decide with `temper users approve ID` or `temper users deny ID`")


RequestArg = Annotated[int, typer.Argument(help="The request's number, from `temper users requests`.")]


@app.command()
def approve(ctx: typer.Context, request_id: RequestArg) -> None:
    """Link the account of request ID to its user, as an immediate /link would have."""
    from memory import LinkError

    with open_store(ctx) as store:
        try:
            request, report = store.links.approve(request_id)
        except LinkError as error:
            _refuse(error)
    typer.echo(f"approved #{request.id}: {request.identity} joined {request.user_handle}: {_moved(report)}")


@app.command()
def deny(ctx: typer.Context, request_id: RequestArg) -> None:
    """Refuse request ID: nothing is linked."""
    from memory import LinkError

    with open_store(ctx) as store:
        try:
            request = store.links.deny(request_id)
        except LinkError as error:
            _refuse(error)
    typer.echo(f"denied #{request.id}: {request.identity} stays apart from {request.user_handle}")


def _refuse(error: LinkError) -> NoReturn:
    typer.echo(f"temper: {error}", err=True)
    raise typer.Exit(2) from None
