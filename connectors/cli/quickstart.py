"""`temper quickstart`: the whole closed loop, offline, on a laptop CPU, in about ten minutes.

    build a tiny executor (a small causal LM from a config, a tokenizer trained in process)
    -> the synthetic task suite: training families, and held-out families that no stage trains on
       (their tasks split in two: validation picks the warm start's epoch, test measures)
    -> warm start: imitate reference solutions (of all training families but the verifier-only
       ones) until validation success stops rising (the curve)
    -> GRPO: replay training tasks through the runtime's executor path in the sandbox (weighted
       towards tasks whose attempts differ), record every call at token level, train on the
       sampled tokens; the verifier-only families are learned here, from their verifiers alone
    -> the gate: current vs candidate on the same test tasks and seeds; promote or refuse
    -> test success before and after, and the plot's path

The warm start's best epoch is chosen on validation tasks, never on the test tasks: the maximum
of a noisy curve measured on the test tasks themselves would overstate the warm start, and any
later candidate would seem to fall back from it.

Nothing is downloaded. Everything lands in a directory of its own (default: a fresh one under
the data dir), so it never touches a real executor's versions.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from connectors.cli.context import get_config

TARGET_GAIN = 0.25
GATE_RESERVE_S = 40.0  # the gate's two held-out evaluations (about 10 s here) and the report


def quickstart(
    ctx: typer.Context,
    seed: Annotated[int, typer.Option("--seed", help="Seeds the model, the tasks and the sampling.")] = 0,
    directory: Annotated[
        Path | None, typer.Option("--dir", help="Where it all goes (default: under the data dir).")
    ] = None,
    minutes: Annotated[
        float, typer.Option("--minutes", min=2, help="Wall-clock budget for the whole run.")
    ] = 10.0,
    quick: Annotated[
        bool, typer.Option("--quick", help="A short run of the same path (tests, smoke checks).")
    ] = False,
) -> None:
    """Run the closed learning loop offline with a tiny executor; print held-out success before and after."""
    import torch

    torch.set_num_threads(1)  # FACTS.md: 3-4x faster than two threads on a busy 2-core machine
    config = get_config(ctx)
    where = directory or config.data_dir / "quickstart" / time.strftime(f"%Y%m%d-%H%M%S-seed{seed}")
    where.mkdir(parents=True, exist_ok=True)
    code = asyncio.run(_run(where, seed, minutes, quick))
    raise typer.Exit(code)


async def _run(where: Path, seed: int, minutes: float, quick: bool) -> int:
    from learner import report_cycle
    from learner.cycle import CycleSettings, run_cycle
    from learner.evaluation import evaluate
    from learner.policy import LoraSettings
    from learner.replay import ReplaySettings, as_served
    from learner.sft import SFTSettings
    from learner.tasks import GRID_FAMILIES, GRID_HELDOUT, GRID_VERIFIER_ONLY, Task, synthetic_suite
    from learner.train import TrainSettings
    from learner.versions import ExecutorVersions
    from learner.warmstart import WarmStartSettings, warm_start
    from memory import MemoryStore
    from runtime.executor import LocalBackend, LocalModel, SamplingParams, build_tiny_model
    from runtime.executor.loop import ExecutorSettings

    started = time.time()
    # The budget: the warm start may use up to half of it; GRPO stops early enough for the gate.
    warm_deadline, grpo_deadline = started + minutes * 30, started + minutes * 60 - GATE_RESERVE_S
    say = lambda text: typer.echo(f"[{time.time() - started:5.0f}s] {text}")  # noqa: E731
    one_turn = ExecutorSettings(max_turns=1, sampling=SamplingParams(temperature=1.0, max_tokens=64))

    # Many training tasks (a tiny model learns to copy names from the instruction only from many
    # examples; with few it memorises commands), fewer held-out ones (evaluated every epoch).
    def split(per_family: int, which: str) -> list[Task]:
        tasks = synthetic_suite(
            seed=seed, per_family=per_family, heldout_families=GRID_HELDOUT, families=GRID_FAMILIES
        )
        return [t for t in tasks if t.split == which]

    # The warm start imitates the first 32 tasks of each family with reference solutions; GRPO
    # replays those and as many again that imitation never saw, from their verifiers alone, as
    # the nightly cycle replays the day's new tasks. (A family's first n tasks are the same
    # whatever the count asked for: synthetic.py.)
    imitated = split(4 if quick else 32, "train")
    train = split(8 if quick else 64, "train")
    with_reference = [t for t in imitated if t.family not in GRID_VERIFIER_ONLY]
    # Distinct tasks of the held-out families, every other one to validation and to test.
    heldout = split(4 if quick else 16, "heldout")
    validation, test = heldout[0::2], heldout[1::2]
    evaluation = as_served(
        ReplaySettings(group_size=2 if quick else 4, seed=10_000 + seed, executor=one_turn)
    )
    say(f"tasks: {len(train)} training ({len({t.family for t in train})} families; the warm start imitates "
        f"{len(with_reference)} of them, from {len({t.family for t in with_reference})} families), "
        f"held-out families {', '.join(sorted(GRID_HELDOUT))}: {len(validation)} validation, {len(test)} test")  # fmt: skip
    model_dir = build_tiny_model(where / "tiny", seed=seed)
    store = MemoryStore.open(where / "memory.db")
    base = LocalModel.load(model_dir)
    say(f"tiny executor built: {model_dir}")
    untrained = await evaluate(test, LocalBackend(base), store, where / "snapshots", evaluation, "untrained")
    say(f"test success, untrained: {untrained.success:.2f}")

    warm_settings = WarmStartSettings(
        sft=SFTSettings(max_epochs=2 if quick else 30, learning_rate=3e-3, examples_per_step=16, seed=seed),
        patience=1 if quick else 4,
        min_epochs=1 if quick else 14,
        evaluation=replace(evaluation, group_size=2),
        deadline=warm_deadline,
    )
    # The curve is measured on every validation task, twice each: cheap enough per epoch.
    warm = await warm_start(
        base, with_reference, validation, store, where, warm_settings,
        on_epoch=lambda epoch, success, loss: say(f"warm start epoch {epoch}: loss {loss:.3f}, validation success {success:.2f}"),
    )  # fmt: skip
    say(f"warm start: best validation success {warm.best_success:.2f} at epoch {warm.best_epoch}")

    versions = ExecutorVersions(where)
    cycle_settings = CycleSettings(
        iterations=2 if quick else 200,
        tasks_per_iteration=4 if quick else 16,
        replay=ReplaySettings(group_size=4 if quick else 8, executor=one_turn),
        evaluation=evaluation,
        # LoRA at 1e-4 (the default, for real models) barely moves a model this small. Replays
        # cost more than updates here, so each batch is trained on twice (the clip bounds it).
        train=TrainSettings(lora=LoraSettings(rank=8), learning_rate=2e-3, updates_per_batch=2),
        seed=seed,
        deadline=grpo_deadline,
    )
    # The gate as the nightly cycle runs it (parse failures and timeouts must not rise at all;
    # held-out replies are constrained, and close in time to parse), but fewer tasks in --quick.
    gate = replace(cycle_settings.gate, min_tasks=min(cycle_settings.gate.min_tasks, len(test)))
    cycle_settings = replace(cycle_settings, gate=gate)
    result = await run_cycle(
        warm.model_dir, train, test, store, where, versions, cycle_settings,
        on_iteration=lambda i, reward, m: say(f"GRPO iteration {i}: train reward {reward:.2f}, {m.line()}"),
    )  # fmt: skip
    decision = result.decision
    gain = result.candidate.success - result.current.success
    report = report_cycle(
        where, result, cycle=1, model=warm.model_dir, tasks=len(train), previous=None,
        baseline=result.current.success,
    )  # fmt: skip
    typer.echo("")
    typer.echo(f"test success (held-out families): untrained {untrained.success:.2f}, warm start {result.current.success:.2f}, "
               f"after GRPO {result.candidate.success:.2f} ({gain * 100:+.1f} points; target +{TARGET_GAIN * 100:.0f})")  # fmt: skip
    typer.echo(f"gate: {'promoted ' + result.version.name if result.version else 'refused'}; "
               f"paired gain {decision.mean_diff:+.3f}, 95% CI [{decision.ci_low:+.3f}, {decision.ci_high:+.3f}]")  # fmt: skip
    typer.echo("gate checks: " + "; ".join(decision.reasons))
    typer.echo(f"plot: {report.plot}")
    typer.echo(f"everything: {where} ({time.time() - started:.0f} s)")
    store.close()
    return 0
