"""`temper tasks ...`: bring task folders in, and check that they are sound.

The shapes of these commands are a contract other tools script against:
  temper tasks import DIR [--split heldout|train]   copy task folders into <data_dir>/tasks/
  temper tasks check [DIR] [--jobs N]                run each reference and an empty attempt
  temper tasks from-episodes [--since T] --out DIR   the day's episodes as task folders
DIR holds task folders in the terminal-bench 2 / Harbor layout (instruction.md, task.toml,
environment/, tests/test.sh, solution/solve.sh), or is one. `check` defaults to the imported
tasks, uses the configured sandbox backend, and exits 1 when a task is unsound: its reference
fails its verifier, or an empty attempt passes it. `from-episodes` turns the live executor
episodes since T (default: the last 24 hours) into tasks scored by their reference outcome
(learner/tasks/episodes.py), replayed in the configured sandbox, and writes each as a folder
under DIR that `temper tasks check DIR` runs; it prints how many episodes became tasks and why
the others did not.
"""

from __future__ import annotations

import asyncio
import shutil
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from connectors.cli.context import get_config

if TYPE_CHECKING:
    from connectors.config import Config
    from learner.tasks import ImportedTasks, Split, Task, TaskCheck
    from runtime.sandbox import BackendName, SandboxOptions

app = typer.Typer(help="Import terminal-bench / Harbor task folders and check them.", no_args_is_help=True)

TAIL_LINES = 15


@app.command("import")
def import_(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="A folder of task folders, or one task folder.")],
    split: Annotated[str, typer.Option("--split", help="heldout (default) or train.")] = "heldout",
) -> None:
    """Copy task folders into the data dir (replacing ones of the same name) and list them."""
    if split not in ("train", "heldout"):
        raise typer.BadParameter("--split must be train or heldout")
    found = _find(directory, cast("Split", split))
    target = get_config(ctx).data_dir / "tasks"
    if found.tasks:
        target.mkdir(parents=True, exist_ok=True)
        typer.echo(f"{'task':<28} {'family':<20} {'difficulty':>10}  {'reference':<9}  runs")
    for task in found.tasks:
        destination = target / task.id
        if destination.exists():
            shutil.rmtree(destination)
        shutil.copytree(found.folders[task.id], destination, symlinks=True)
        runs = "here" if not task.needs_docker else "needs docker: " + "; ".join(task.docker_needs)
        typer.echo(
            f"{task.id:<28} {task.family:<20} {task.difficulty or '-':>10}  "
            f"{'yes' if task.has_reference else 'no':<9}  {runs}"
        )
    for skipped in found.skipped:
        typer.echo(f"skipped {skipped.path.name}: {skipped.reason}", err=True)
    typer.echo(f"imported {len(found.tasks)} tasks into {target} ({len(found.skipped)} folders skipped)")
    if found.skipped or not found.tasks:
        raise typer.Exit(1)


@app.command()
def check(
    ctx: typer.Context,
    directory: Annotated[
        Path | None, typer.Argument(help="Task folders to check (default: the imported tasks).")
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Tasks checked at once.")] = 1,
) -> None:
    """Run each task's reference solution and an empty attempt, and say which tasks are sound."""
    config = get_config(ctx)
    found = _find(directory or config.data_dir / "tasks", "heldout")
    for skipped in found.skipped:
        typer.echo(f"skipped {skipped.path.name}: {skipped.reason}", err=True)
    if not found.tasks:
        typer.echo("temper: no tasks to check", err=True)
        raise typer.Exit(1)
    results = asyncio.run(_check_all(config, found.tasks, jobs))
    for result in results:
        if result.sound is False and result.reference_passed is False:
            tail = "\n".join(result.reference_output.splitlines()[-TAIL_LINES:])
            typer.echo(f"\n{result.task.id}: the reference failed:\n{_indent(tail)}")
    unsound = sum(result.sound is False for result in results)
    sound = sum(result.sound is True for result in results)
    unknown = len(results) - sound - unsound
    typer.echo(f"\n{sound} sound, {unsound} unsound, {unknown} not told (not run, or no reference)")
    if unsound:
        raise typer.Exit(1)


@app.command("from-episodes")
def from_episodes(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", help="Where to write the task folders.")],
    since: Annotated[
        str,
        typer.Option(
            "--since", help="From this time: ISO date/time (UTC unless it says) or an age (24h, 7d)."
        ),
    ] = "24h",
) -> None:
    """Turn the day's executor episodes into Harbor / terminal-bench task folders."""
    from connectors.cli.memory import open_store
    from connectors.cli.trajectories import parse_time
    from learner.tasks import TaskError, export_task, harvest_episodes
    from runtime.sandbox import IsolationWarning

    config = get_config(ctx)
    start = parse_time(since)
    backend, options = _sandbox(config)
    with open_store(ctx) as store, warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolationWarning)  # said once, by _sandbox
        harvest = asyncio.run(
            harvest_episodes(
                store, config.data_dir / "snapshots", since=start, backend=backend, options=options
            )
        )
    written = 0
    for task in harvest.tasks:
        try:
            folder = export_task(task, out)
        except TaskError as error:
            typer.echo(f"not written: {error}", err=True)
            continue
        written += 1
        typer.echo(f"{task.id:<12} {task.split:<8} {folder}")
    typer.echo(harvest.line())
    typer.echo(f"wrote {written} task folders to {out}")


def _sandbox(config: Config) -> tuple[BackendName, SandboxOptions]:
    """The configured sandbox backend, resolved once ("auto" probes), and its options."""
    from runtime.sandbox import Limits, SandboxOptions, SandboxUnavailable, choose_backend

    settings = config.sandbox
    options = SandboxOptions(limits=Limits(memory_bytes=settings.memory_mb << 20), network=settings.network)
    try:
        chosen = asyncio.run(choose_backend(settings.backend, options))
    except SandboxUnavailable as error:
        typer.echo(f"temper: {error}", err=True)
        raise typer.Exit(2) from None
    if chosen.warning:
        typer.echo(f"warning: {chosen.warning}", err=True)
    return cast("BackendName", chosen.name), options


def _row(result: TaskCheck) -> None:
    if result.skipped:
        typer.echo(f"{result.task.id:<28} skipped: {result.skipped}")
        return
    reference = {True: "passes", False: "FAILS", None: "none"}[result.reference_passed]
    empty = "fails" if result.empty_failed else "PASSES"
    sound = {True: "yes", False: "NO", None: "?"}[result.sound]
    typer.echo(f"{result.task.id:<28} {reference:<9} {empty:<6} {sound:<5} {result.seconds:>7.2f}")


def _find(directory: Path, split: Split) -> ImportedTasks:
    from learner.tasks import TaskFormatError, import_tasks

    try:
        return import_tasks(directory, split)
    except TaskFormatError as error:
        typer.echo(f"temper: {error}", err=True)
        raise typer.Exit(2) from None


async def _check_all(config: Config, tasks: list[Task], jobs: int) -> list[TaskCheck]:
    """Check `tasks` in the configured sandbox backend (resolved once: "auto" probes)."""
    from learner.tasks import check_tasks
    from runtime.sandbox import IsolationWarning, Limits, SandboxOptions, SandboxUnavailable, choose_backend

    settings = config.sandbox
    options = SandboxOptions(limits=Limits(memory_bytes=settings.memory_mb << 20), network=settings.network)
    try:
        chosen = await choose_backend(settings.backend, options)
    except SandboxUnavailable as error:
        typer.echo(f"temper: {error}", err=True)
        raise typer.Exit(2) from None
    if chosen.warning:
        typer.echo(f"warning: {chosen.warning}", err=True)
    typer.echo(f"{'task':<28} {'reference':<9} {'empty':<6} {'sound':<5} {'seconds':>7}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolationWarning)  # said once, above
        return await check_tasks(tasks, cast("BackendName", chosen.name), options, jobs=jobs, on_result=_row)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
