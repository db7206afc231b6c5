"""`temper quickstart`: the whole closed loop, offline, on a laptop CPU, in about ten minutes.

The run (connectors/quickstart/) is bounded by work, not time: a warm start of at most a fixed
number of epochs and a fixed number of GRPO steps, the same on every machine. It prints the time
that should take here after a short calibration, then progress and an ETA; `--minutes` is only a
safety cap, and the run says when the cap cut it short. Nothing is downloaded. Everything lands
in a directory of its own (default: a fresh one under the data dir), so it never touches a real
executor's versions.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from connectors.cli.context import get_config


def quickstart(
    ctx: typer.Context,
    seed: Annotated[int, typer.Option("--seed", help="Seeds the model, the tasks and the sampling.")] = 0,
    directory: Annotated[
        Path | None, typer.Option("--dir", help="Where it all goes (default: under the data dir).")
    ] = None,
    minutes: Annotated[
        float,
        typer.Option(
            "--minutes", min=1, help="Safety cap on wall-clock time; the run does a fixed amount of work."
        ),
    ] = 30.0,
    quick: Annotated[
        bool, typer.Option("--quick", help="A short run of the same path (tests, smoke checks).")
    ] = False,
    guidance: Annotated[
        bool,
        typer.Option(
            "--guidance",
            help="After each GRPO step, imitate the references of the tasks no attempt solved "
            "(learner/guidance.py; off: on fresh seeds it gained no more than GRPO alone).",
        ),
    ] = False,
) -> None:
    """Run the closed learning loop offline with a tiny executor; print held-out success before and after."""
    import torch

    from connectors.quickstart import QuickstartPlan, run_quickstart
    from connectors.quickstart.progress import QuickstartProgress
    from runtime.sandbox import watch_children_with_pidfds

    torch.set_num_threads(1)  # FACTS.md: 3-4x faster than two threads on a busy 2-core machine
    config = get_config(ctx)
    where = directory or config.data_dir / "quickstart" / time.strftime(f"%Y%m%d-%H%M%S-seed{seed}")
    if where.exists() and not where.is_dir():
        raise typer.BadParameter(f"{where} is a file, not a directory", param_hint="--dir")
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # a directory not ours to write, a file on the way
        raise typer.BadParameter(
            f"cannot make the directory {where}: {error.strerror}", param_hint="--dir"
        ) from None
    plan = replace(QuickstartPlan.quick() if quick else QuickstartPlan(), guidance=guidance)
    watch_children_with_pidfds()  # every sandbox starts from the one loop below
    with QuickstartProgress() as progress:
        code = asyncio.run(run_quickstart(where, seed, plan, minutes, progress))
    raise typer.Exit(code)
