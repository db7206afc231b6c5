"""`temper memory ...`: import, search, export and maintain the memory database.

The shapes of these commands are a contract other tools script against:
  temper memory import FILE            JSON Lines in, bad lines reported and skipped
  temper memory search QUERY [--user U] [--session S] [--limit N] [--json]
  temper memory stats [--json]
  temper memory export FILE            the import format; round-trips
Without --user a search covers every user: this is the operator's tool. FILE may be `-`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from connectors.cli.context import get_config
from connectors.cli.output import export_target

if TYPE_CHECKING:
    from memory import MemoryStore

app = typer.Typer(help="Search, import, export and maintain temper's memory.", no_args_is_help=True)

MAX_ERRORS_SHOWN = 50


@contextmanager
def open_store(ctx: typer.Context) -> Iterator[MemoryStore]:
    from memory import MemoryStore, MemoryStoreError

    path = get_config(ctx).memory.db_path
    try:
        store = MemoryStore.open(path)
    except MemoryStoreError as error:
        typer.echo(f"temper: cannot open the memory database {path}: {error}", err=True)
        raise typer.Exit(1) from None
    try:
        yield store
    finally:
        store.close()


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat()


@app.command("import")
def import_(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(help="A JSON Lines file, one message per line; - for stdin.")],
) -> None:
    """Import messages; bad lines are reported by number and skipped, the rest all land."""
    from memory import import_jsonl
    from memory.jsonl import read_lines

    if file != "-" and not Path(file).is_file():
        typer.echo(f"temper: no such file: {file}", err=True)
        raise typer.Exit(2)
    lines = sys.stdin if file == "-" else read_lines(Path(file))
    with open_store(ctx) as store:
        report = import_jsonl(store, lines)
    for error in report.errors[:MAX_ERRORS_SHOWN]:
        typer.echo(f"skipped {error}", err=True)
    if len(report.errors) > MAX_ERRORS_SHOWN:
        typer.echo(f"skipped {len(report.errors) - MAX_ERRORS_SHOWN} more bad lines", err=True)
    typer.echo(
        f"imported {report.added} messages from {report.lines} lines"
        f" ({report.duplicates} already present, {len(report.errors)} bad lines skipped)"
    )
    if report.errors:
        raise typer.Exit(1)


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help='Any text: a question, words, "a phrase", prefix*.')],
    user: Annotated[str | None, typer.Option("--user", help="Only this user's messages.")] = None,
    session: Annotated[str | None, typer.Option("--session", help="Only this session's messages.")] = None,
    role: Annotated[str | None, typer.Option("--role", help="user, assistant, system or tool.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=200, help="How many hits.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array of hits.")] = False,
    hybrid: Annotated[
        bool,
        typer.Option(
            "--hybrid",
            help="Fuse with sentence embeddings (extra `embeddings`; run `temper memory embed` first).",
        ),
    ] = False,
) -> None:
    """Find the messages that answer QUERY, best first."""
    from memory import EmbeddingUnavailable

    with open_store(ctx) as store:
        try:
            if hybrid:
                index = _vector_index(store)
                hits = index.search(
                    query, user=user, all_users=user is None, session=session, role=role, limit=limit
                )
            else:
                hits = store.search(
                    query, user=user, all_users=user is None, session=session, role=role, limit=limit
                )
        except (ValueError, ImportError, EmbeddingUnavailable) as error:
            typer.echo(f"temper: {error}", err=True)
            raise typer.Exit(2) from None
    if as_json:
        records = [
            {
                "id": hit.id,
                "external_id": hit.external_id,
                "session": hit.session,
                "user": hit.user,
                "role": hit.role,
                "content": hit.content,
                "ts": iso(hit.ts),
                "score": round(hit.score, 6),
                "snippet": hit.snippet,
            }
            for hit in hits
        ]
        typer.echo(json.dumps(records, ensure_ascii=False))
        return
    if not hits:
        typer.echo("no matches")
    for hit in hits:
        when = iso(hit.ts)[:16].replace("T", " ")
        typer.echo(f"{hit.score:8.3f}  {when}  {hit.user}/{hit.session}  {hit.role}: {hit.snippet}")


@app.command()
def stats(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as one JSON object.")] = False,
) -> None:
    """Counts and sizes of the memory database."""
    from dataclasses import asdict

    with open_store(ctx) as store:
        figures = asdict(store.stats())
        path = store.path
    if as_json:
        typer.echo(json.dumps({"path": str(path), **figures}))
        return
    typer.echo(f"database: {path}")
    for name, value in figures.items():
        shown = _human_bytes(value) if name.endswith("_bytes") else f"{value:,}"
        typer.echo(f"{name.replace('_', ' ')}: {shown}")
    if figures["messages"]:
        ratio = (figures["database_bytes"] + figures["wal_bytes"]) / max(1, figures["text_bytes"])
        typer.echo(f"disk per byte of text: {ratio:.2f}")


def _human_bytes(value: int) -> str:
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:,.1f} {unit}" if unit != "B" else f"{value:,} B"
        size /= 1024
    return f"{value:,} B"


@app.command()
def export(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(help="Where to write JSON Lines; - for stdout.")],
) -> None:
    """Write every message in the import format."""
    from memory import export_jsonl

    with open_store(ctx) as store, export_target(file) as out:
        count = export_jsonl(store, out)
    typer.echo(f"exported {count} messages", err=file == "-")


def _vector_index(store: MemoryStore):
    import torch

    from memory import SentenceEmbedder, VectorIndex

    torch.set_num_threads(1)  # FACTS.md: one thread is 3-4x faster on a busy 2-core machine
    return VectorIndex.open(store, SentenceEmbedder.shared())  # loaded once per process


@app.command()
def embed(
    ctx: typer.Context,
    max_messages: Annotated[int | None, typer.Option("--max", help="Stop after this many.")] = None,
) -> None:
    """Embed messages added since the last run, for `search --hybrid` (extra `embeddings`)."""
    import time

    from memory import EmbeddingUnavailable

    with open_store(ctx) as store:
        try:
            index = _vector_index(store)
        except (ImportError, EmbeddingUnavailable) as error:
            typer.echo(f"temper: {error}", err=True)
            raise typer.Exit(2) from None
        started = time.perf_counter()
        count = index.backfill(max_messages=max_messages)
        pruned = index.prune()
    rate = count / max(time.perf_counter() - started, 1e-9)
    typer.echo(f"embedded {count} messages ({rate:.0f}/s), pruned {pruned} vectors of deleted messages")


@app.command()
def maintain(ctx: typer.Context) -> None:
    """Optimize the search indexes, checkpoint the WAL, return free pages to the disk."""
    with open_store(ctx) as store:
        timings = store.maintain()
    for step, seconds in timings.items():
        typer.echo(f"{step}: {seconds:.2f} s")
