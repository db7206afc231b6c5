"""Where a command writes its export: a file that appears only once it is whole, or stdout.

    with export_target(file) as out:        # file: a path, or "-" for stdout
        count = export_jsonl(store, out)

The text goes to ``<file>.partial`` and is renamed to ``<file>`` when the block ends without an
error, so a failed export never leaves a half-written file under the real name (the partial one
is removed). A path that cannot be written (a missing or unwritable directory, a file on the way)
is one line on stderr and exit code 2, as a bad argument is, never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

import typer

from connectors.cli.context import CONFIG_ERROR_EXIT


@contextmanager
def export_target(file: str) -> Iterator[TextIO]:
    if file == "-":
        yield sys.stdout
        return
    target = Path(file)
    partial = target.with_name(target.name + ".partial")
    with cannot_write_exits(target):
        out = open(partial, "w", encoding="utf-8")
    try:
        with out:
            yield out
        with cannot_write_exits(target):
            partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


@contextmanager
def cannot_write_exits(target: Path | str) -> Iterator[None]:
    """An OSError inside the block: `temper: cannot write <target>: <why>` and exit code 2."""
    try:
        yield
    except OSError as error:
        typer.echo(f"temper: cannot write {target}: {error.strerror or error}", err=True)
        raise typer.Exit(CONFIG_ERROR_EXIT) from None
