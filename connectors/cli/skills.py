"""`temper skills ...`: the skill library under <data_dir>/skills, and its outcomes.

The shapes of these commands are a contract other tools script against:
  temper skills list [--json] [--archived]     --json: [{name, description, trust, pinned,
                                               uses, success_rate, success_without, state}]
  temper skills show NAME [--file PATH] [--history]
  temper skills search QUERY [--limit N] [--json]
  temper skills stats [NAME] [--json]
  temper skills validate DIR                   a skill folder or a tree of them; exit 1 on errors
  temper skills import PATH                    one line per skill, then `imported: N refused: M`
  temper skills approve NAME | pin NAME [--off] | archive NAME | restore NAME [--version N]
  temper skills remove NAME [--yes]
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from connectors.cli.context import get_config

if TYPE_CHECKING:
    from runtime import SkillCatalog

app = typer.Typer(help="The skill library: list, inspect, import, approve, archive.", no_args_is_help=True)


@contextmanager
def open_catalog(ctx: typer.Context) -> Iterator[SkillCatalog]:
    from connectors.assembly import build_skills
    from memory import MemoryStore, MemoryStoreError

    config = get_config(ctx)
    try:
        store = MemoryStore.open(config.memory.db_path)
    except MemoryStoreError as error:
        typer.echo(f"temper: cannot open the memory database {config.memory.db_path}: {error}", err=True)
        raise typer.Exit(1) from None
    try:
        catalog = build_skills(config, store)
        report = catalog.sync()
        for name, problem in report.invalid.items():
            typer.echo(f"warning: {name} is left out of the index: {problem}", err=True)
        yield catalog
    finally:
        store.close()


@contextmanager
def refusals() -> Iterator[None]:
    """A refused skill operation: its message on stderr and exit code 1."""
    from skills import SkillError

    try:
        yield
    except SkillError as error:
        typer.echo(f"temper: {error}", err=True)
        raise typer.Exit(1) from None


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


@app.command("list")
def list_(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array.")] = False,
    archived: Annotated[bool, typer.Option("--archived", help="List the archived skills instead.")] = False,
) -> None:
    """The skills in use (or archived), with trust and outcomes."""
    with open_catalog(ctx) as catalog:
        if archived:
            names = catalog.library.archived()
            if as_json:
                typer.echo(json.dumps([{"name": name, "state": "archived"} for name in names]))
            for name in [] if as_json else names:
                typer.echo(name)
            return
        records = []
        for match in catalog.index.all():
            stats = catalog.stats(match.name)
            health = catalog.index.health(match.name)
            records.append(
                {
                    "name": match.name,
                    "description": match.description,
                    "trust": match.trust,
                    "pinned": match.pinned,
                    "uses": stats.uses,
                    "success_rate": stats.success_with,
                    "success_without": stats.success_without,
                    "state": "ok" if health is None else health.state,
                }
            )
    if as_json:
        typer.echo(json.dumps(records, ensure_ascii=False))
        return
    if not records:
        typer.echo("no skills yet (temper skills import PATH, or let the agent write some)")
    for record in records:
        marks = ("" if record["trust"] == "trusted" else " [untrusted]") + (
            " [pinned]" if record["pinned"] else ""
        )
        state = "" if record["state"] == "ok" else f" [{record['state']}]"
        typer.echo(
            f"{record['name']}{marks}{state}: {record['uses']} uses, {_rate(record['success_rate'])} success"
            f" (without: {_rate(record['success_without'])})"
        )


@app.command()
def show(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    file: Annotated[str | None, typer.Option("--file", help="One of its files, e.g. scripts/run.sh.")] = None,
    history: Annotated[bool, typer.Option("--history", help="List its versions instead.")] = False,
) -> None:
    """Print a skill's SKILL.md (or one of its files, or its versions)."""
    from datetime import UTC, datetime

    with open_catalog(ctx) as catalog, refusals():
        if history:
            for version in catalog.library.history(name):
                when = datetime.fromtimestamp(version.at, tz=UTC).strftime("%Y-%m-%d %H:%M")
                typer.echo(f"{version.number:4d}  {when}  {version.note}")
            return
        text = catalog.library.text(name) if file is None else catalog.library.read_file(name, file)
        typer.echo(text, nl=not text.endswith("\n"))
        if file is None and (files := catalog.library.file_names(name)):
            typer.echo("files: " + ", ".join(files), err=True)


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="A request, or words.")],
    limit: Annotated[int, typer.Option("--limit", min=1, max=50, help="How many skills.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array.")] = False,
) -> None:
    """The skills the index finds for QUERY, best first (untrusted ones included, marked)."""
    with open_catalog(ctx) as catalog:
        matches = catalog.index.search(query, limit=limit, trusted_only=False)
    if as_json:
        records = [
            {"name": m.name, "description": m.description, "trust": m.trust, "score": round(m.score, 4)}
            for m in matches
        ]
        typer.echo(json.dumps(records, ensure_ascii=False))
        return
    if not matches:
        typer.echo("no matches")
    for match in matches:
        mark = "" if match.trust == "trusted" else " [untrusted]"
        typer.echo(f"{match.score:7.2f}  {match.name}{mark}: {match.description}")


@app.command()
def stats(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="One skill (default: every skill used).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array.")] = False,
) -> None:
    """Outcomes per skill: uses, success with it, success of comparable turns without it."""
    from dataclasses import asdict

    with open_catalog(ctx) as catalog:
        names = [name] if name else sorted(set(catalog.library.names()) | set(catalog.index.used_skills()))
        figures = []
        for skill in names:
            record = asdict(catalog.stats(skill))
            health = catalog.index.health(skill)
            record["state"] = "ok" if health is None else health.state
            record["failing"] = catalog.is_failing(catalog.stats(skill))
            record["note"] = "" if health is None else health.note
            figures.append(record)
    if as_json:
        typer.echo(json.dumps(figures))
        return
    for record in figures:
        typer.echo(
            f"{record['name']}: {record['uses']} uses ({record['rewarded']} rated), success with"
            f" {_rate(record['success_with'])}, without {_rate(record['success_without'])}"
            f" over {record['comparable']} comparable turns ({record['baseline']}); {record['state']}"
            + (f": {record['note']}" if record["note"] else "")
        )


@app.command()
def validate(
    directory: Annotated[Path, typer.Argument(help="A skill folder (with SKILL.md) or a folder of them.")],
) -> None:
    """Check folders against the agentskills.io format and the security scan; exit 1 on errors."""
    from skills import (
        SKILL_FILE,
        SkillError,
        check,
        find_skill_folders,
        read_folder,
        scan_skill,
        split_front_matter,
    )

    if not directory.is_dir():
        typer.echo(f"temper: {directory} is not a folder", err=True)
        raise typer.Exit(2)
    folders = find_skill_folders(directory)
    if not folders:
        typer.echo(f"temper: no {SKILL_FILE} in {directory} or below it", err=True)
        raise typer.Exit(1)
    failed = 0
    for folder in folders:
        lines: list[str] = []
        errors = 0
        try:
            text = (folder / SKILL_FILE).read_text(encoding="utf-8")
            front, body = split_front_matter(text)
            for problem in check(front, body, folder.name):
                errors += problem.severity == "error"
                lines.append(f"  {problem.severity}: {problem}")
        except (SkillError, UnicodeDecodeError) as error:
            errors += 1
            lines.append(f"  error: {error}")
        texts = {}
        for path, data in read_folder(folder).items():
            try:
                texts[path] = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
        for finding in scan_skill(texts):
            errors += finding.severity == "block"
            lines.append(f"  {'error' if finding.severity == 'block' else 'warning'}: {finding}")
        failed += errors > 0
        typer.echo(f"{folder}: {'invalid' if errors else 'valid'}")
        for line in lines:
            typer.echo(line)
    raise typer.Exit(1 if failed else 0)


@app.command("import")
def import_(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="A skill folder, or a folder holding many.")],
) -> None:
    """Import skill folders as they are; each is untrusted until `temper skills approve`."""
    from skills import SkillError, import_path

    with open_catalog(ctx) as catalog:
        try:
            outcomes = import_path(catalog.library, path)
        except SkillError as error:
            typer.echo(f"temper: {error}", err=True)
            raise typer.Exit(2) from None
        catalog.sync()
    for outcome in outcomes:
        label = outcome.name or outcome.source.name
        if outcome.imported:
            notes = f" ({'; '.join(outcome.notes)})" if outcome.notes else ""
            typer.echo(f"imported {label} from {outcome.source}{notes}")
            for warning in outcome.warnings:
                typer.echo(f"  warning: {warning}")
        else:
            typer.echo(f"refused {label} from {outcome.source}: {outcome.reason}")
    imported = sum(outcome.imported for outcome in outcomes)
    if imported:
        typer.echo(
            "note: imported skills stay out of prompts until approved (temper skills approve NAME)", err=True
        )
    typer.echo(f"imported: {imported} refused: {len(outcomes) - imported}")


@app.command()
def approve(ctx: typer.Context, name: Annotated[str, typer.Argument(help="The skill's name.")]) -> None:
    """Trust an imported skill: it may enter prompts and be used by the agent."""
    with open_catalog(ctx) as catalog, refusals():
        written = catalog.approve(name)
    typer.echo(f"approved {name} (version {written.version})")


@app.command()
def pin(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    off: Annotated[bool, typer.Option("--off", help="Unpin it.")] = False,
) -> None:
    """List a skill in every prompt (within the skill budget), whatever the request."""
    with open_catalog(ctx) as catalog, refusals():
        catalog.pin(name, not off)
    typer.echo(f"{'unpinned' if off else 'pinned'} {name}")


@app.command()
def archive(ctx: typer.Context, name: Annotated[str, typer.Argument(help="The skill's name.")]) -> None:
    """Take a skill out of use (out of the index and prompts); `restore` brings it back."""
    with open_catalog(ctx) as catalog, refusals():
        catalog.archive(name)
    typer.echo(f"archived {name}")


@app.command()
def restore(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    version: Annotated[
        int | None, typer.Option("--version", min=1, help="Go back to this version (see show --history).")
    ] = None,
) -> None:
    """Bring an archived skill back, or a skill in use back to an earlier version."""
    with open_catalog(ctx) as catalog, refusals():
        catalog.restore(name, version)
    typer.echo(f"restored {name}" + (f" to version {version}" if version else ""))


@app.command()
def remove(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask.")] = False,
) -> None:
    """Delete a skill for good, with its history (its recorded outcomes stay)."""
    if not yes and not typer.confirm(f"delete {name} and all its versions?"):
        raise typer.Exit(1)
    with open_catalog(ctx) as catalog, refusals():
        catalog.remove(name)
    typer.echo(f"removed {name}")
