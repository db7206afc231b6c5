"""`temper learn`: run one learning cycle now (`--now`), stop the running one (`--cancel`), or
say when the daemon runs the next.

The cycle itself, what it trains and where it works, is connectors/learning.py; its progress
file, its cancellation and its worker process are connectors/nightly/. `--now` runs the cycle
in this process, with the same progress file and lock as the daemon's worker: `temper status`
shows it, `temper learn --cancel` stops it, and only one cycle runs per data dir.
"""

from __future__ import annotations

import asyncio
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from connectors.cli.context import get_config

if TYPE_CHECKING:
    from connectors.config import Config
    from connectors.nightly.worker import CycleOutcome


class Launcher(StrEnum):
    none = "none"
    accelerate = "accelerate"


app = typer.Typer(
    help="Train the executor on replays of tasks, gate it, promote it.", invoke_without_command=True
)


@app.callback()
def learn(
    ctx: typer.Context,
    now: Annotated[
        bool, typer.Option("--now", help="Run a cycle now instead of waiting for the daemon's schedule.")
    ] = False,
    cancel: Annotated[
        bool,
        typer.Option("--cancel", help="Stop the running cycle at its next step; the next run resumes it."),
    ] = False,
    minutes: Annotated[
        float, typer.Option("--minutes", min=1, help="Wall-clock budget for training.")
    ] = 60.0,
    iterations: Annotated[
        int, typer.Option("--iterations", min=0, help="At most this many GRPO steps.")
    ] = 500,
    per_family: Annotated[int, typer.Option("--per-family", min=1, help="Synthetic tasks per family.")] = 8,
    launcher: Annotated[
        Launcher | None,
        typer.Option(
            "--launcher",
            help="none: train in this process; accelerate: --processes ranks under `accelerate launch` "
            "(default: [learner] launcher).",
        ),
    ] = None,
    processes: Annotated[
        int | None,
        typer.Option(
            "--processes", min=1, help="Ranks for --launcher accelerate (default: [learner] processes)."
        ),
    ] = None,
) -> None:
    """Run one learning cycle (--now), stop the running one (--cancel), or say when the daemon runs the next."""
    from connectors.nightly.progress import read_progress, render_progress, request_cancel

    config = get_config(ctx)
    if now and cancel:
        typer.echo("temper: --now and --cancel exclude each other", err=True)
        raise typer.Exit(2)
    if cancel:
        pid = request_cancel(config.data_dir)
        if pid is None:
            typer.echo("No learning cycle is running.")
            raise typer.Exit(1)
        typer.echo(
            f"Asked the learning cycle (pid {pid}) to stop: it stops after its current step, "
            "and the next run (`temper learn --now`, or tonight's) resumes from there."
        )
        return
    if not now:
        typer.echo(
            "The daemon runs a learning cycle nightly (its [daemon] learner schedule; `temper status` shows the next run)."
        )
        line = render_progress(read_progress(config.data_dir))
        if line is not None:
            typer.echo(f"Learning cycle: {line}")
        typer.echo("Run one now with `temper learn --now`.")
        return
    config = _with_launcher(config, launcher, processes)
    run = _run_launched if config.learner.launcher == "accelerate" else _run_now
    outcome = run(config, minutes=minutes, iterations=iterations, per_family=per_family)
    if outcome.phase == "cancelled":
        typer.echo("The cycle was cancelled; `temper learn --now` resumes it from its last step.", err=True)
        raise typer.Exit(1)
    typer.echo(outcome.report)


def _with_launcher(config: Config, launcher: Launcher | None, processes: int | None) -> Config:
    """The config with the command line's launcher and process count over the file's."""
    update: dict[str, object] = {}
    if launcher is not None:
        update["launcher"] = launcher.value
    if processes is not None:
        update["processes"] = processes
    if not update:
        return config
    return config.model_copy(update={"learner": config.learner.model_copy(update=update)})


def _run_launched(config: Config, *, minutes: float, iterations: int, per_family: int) -> CycleOutcome:
    """The cycle as the daemon runs it (connectors/nightly/runner.py): a worker process, here
    `[learner] processes` ranks under accelerate's launcher, its log shown as it is written."""
    from connectors.nightly.runner import NightlyRun, NightlySettings, WorkerFailed

    run = NightlyRun(config, NightlySettings(iterations=iterations, per_family=per_family, minutes=minutes))
    typer.echo(
        f"Training with {config.learner.processes} processes under accelerate's launcher "
        f"(log: {run.log_file})."
    )
    try:
        return asyncio.run(run.run(echo=typer.echo))
    except WorkerFailed as error:
        typer.echo(f"temper: {error}", err=True)
        raise typer.Exit(1) from None


def _run_now(config: Config, *, minutes: float, iterations: int, per_family: int) -> CycleOutcome:
    from connectors.learning import LearnerSetupError
    from connectors.nightly.worker import CycleBusy, run_watched_cycle

    try:
        return asyncio.run(
            run_watched_cycle(
                config, say=typer.echo, minutes=minutes, iterations=iterations, per_family=per_family
            )
        )
    except (LearnerSetupError, CycleBusy) as error:
        typer.echo(f"temper: {error}", err=True)
        raise typer.Exit(2) from None
