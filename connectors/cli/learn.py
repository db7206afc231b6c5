"""`temper learn`: run one learning cycle now (`--now`), or say when the daemon runs the next.

The cycle itself, what it trains and where it works, is connectors/learning.py.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from connectors.cli.context import get_config
from connectors.learning import LearnerSetupError, run_learning_cycle

app = typer.Typer(
    help="Train the executor on replays of tasks, gate it, promote it.", invoke_without_command=True
)


@app.callback()
def learn(
    ctx: typer.Context,
    now: Annotated[
        bool, typer.Option("--now", help="Run a cycle now instead of waiting for the daemon's schedule.")
    ] = False,
    minutes: Annotated[
        float, typer.Option("--minutes", min=1, help="Wall-clock budget for training.")
    ] = 60.0,
    iterations: Annotated[
        int, typer.Option("--iterations", min=0, help="At most this many GRPO steps.")
    ] = 500,
    per_family: Annotated[int, typer.Option("--per-family", min=1, help="Synthetic tasks per family.")] = 8,
) -> None:
    """Run one learning cycle (--now), or say when the daemon runs the next one."""
    config = get_config(ctx)
    if not now:
        typer.echo(
            "The daemon runs a learning cycle nightly (its [daemon] learner schedule; `temper status` shows the next run)."
        )
        typer.echo("Run one now with `temper learn --now`.")
        return
    try:
        summary = asyncio.run(
            run_learning_cycle(
                config, minutes=minutes, iterations=iterations, per_family=per_family, say=typer.echo
            )
        )
    except LearnerSetupError as error:
        typer.echo(f"temper: {error}", err=True)
        raise typer.Exit(2) from None
    typer.echo(summary)
