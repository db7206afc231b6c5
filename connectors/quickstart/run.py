"""The quickstart's run, top to bottom:

    build a tiny executor (a small causal LM from a config, a tokenizer trained in process)
    -> the synthetic task suite: training families, and held-out families that no stage trains on
       (their tasks split in two: validation picks the warm start's epoch, test measures)
    -> calibrate: the untrained executor's test success (timed), one supervised step (timed);
       print the time the plan should take here
    -> warm start: imitate reference solutions (of all training families but the verifier-only
       ones) until validation success stops rising, at most the plan's epochs
    -> GRPO, the plan's number of steps: replay training tasks through the runtime's executor
       path in the sandbox (weighted towards tasks whose attempts differ), record every call at
       token level, train on the sampled tokens; validation and test success probed every few
       steps and after the last; the candidate is the probed adapter best on validation
    -> the gate: current vs candidate on the same test tasks and seeds; promote or refuse
    -> test success before and after, steps to +25 points, the plots' paths

The warm start's best epoch and GRPO's candidate are chosen on validation tasks, never on the
test tasks: the maximum of a noisy curve measured on the test tasks themselves would overstate
what it picks, and the gate's comparison would no longer measure it. The test curve only reports.
GRPO's held-out success is not monotone at this batch size (seed 42: every probe 14-28 points
above the warm start, the last step back at it), so the last step is not the candidate.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from connectors.quickstart.curves import Curves, plot_curves, steps_to_gain
from connectors.quickstart.plan import (
    EXAMPLES_PER_STEP,
    Calibration,
    QuickstartPlan,
    estimate,
    training_threads,
)
from connectors.quickstart.progress import QuickstartProgress

TARGET_GAIN = 0.25
GATE_RESERVE = 1.5  # the safety cap keeps this many gate estimates of time for the gate


async def run_quickstart(
    where: Path, seed: int, plan: QuickstartPlan, cap_minutes: float, progress: QuickstartProgress
) -> int:
    from learner import Probe, ProbePoint, report_cycle
    from learner.cycle import CycleSettings, run_cycle
    from learner.evaluation import evaluate
    from learner.gate import success_by_kind
    from learner.guidance import GuidanceSettings
    from learner.policy import LoraSettings
    from learner.replay import ReplaySettings, all_or_none, as_served
    from learner.sft import SFTSettings, sft
    from learner.tasks import (
        GRID_FAMILIES,
        GRID_HELDOUT,
        GRID_VERIFIER_ONLY,
        Task,
        run_reference,
        synthetic_suite,
    )
    from learner.train import StepMetrics, TrainSettings
    from learner.versions import ExecutorVersions
    from learner.warmstart import WarmStartSettings, examples, warm_start
    from memory import MemoryStore
    from runtime.executor import LocalBackend, LocalModel, SamplingParams, build_tiny_model
    from runtime.executor.loop import ExecutorSettings

    say = progress.say
    cap = progress.started + cap_minutes * 60
    one_turn = ExecutorSettings(max_turns=1, sampling=SamplingParams(temperature=1.0, max_tokens=64))

    # Many training tasks (a tiny model learns to copy names from the instruction only from many
    # examples; with few it memorises commands), fewer held-out ones (evaluated every epoch).
    def split(per_family: int, which: str) -> list[Task]:
        tasks = synthetic_suite(
            seed=seed, per_family=per_family, heldout_families=GRID_HELDOUT, families=GRID_FAMILIES
        )
        return [t for t in tasks if t.split == which]

    # The warm start imitates the first tasks of each family with reference solutions; GRPO
    # replays those and as many again that imitation never saw, from their verifiers alone, as
    # the nightly cycle replays the day's new tasks. (A family's first n tasks are the same
    # whatever the count asked for: synthetic.py.)
    imitated = split(plan.imitated_per_family, "train")
    train = split(plan.train_per_family, "train")
    with_reference = [t for t in imitated if t.family not in GRID_VERIFIER_ONLY]
    # Distinct tasks of the held-out families (no two share an instruction or a command), every
    # other one to validation and to test.
    heldout = split(plan.heldout_per_family, "heldout")
    validation, test = heldout[0::2], heldout[1::2]
    # At the temperature it trains at: the quickstart's figures (README) were measured so; the
    # daemon's gate evaluates at `[executor] temperature` (connectors/learning.py).
    evaluation = as_served(
        ReplaySettings(
            group_size=plan.eval_group, seed=10_000 + seed, executor=one_turn,
            concurrent_tasks=plan.concurrent_tasks,
        ),
        temperature=1.0,
    )  # fmt: skip
    say(f"tasks: {len(train)} training ({len({t.family for t in train})} families; the warm start imitates "
        f"{len(with_reference)} of them, from {len({t.family for t in with_reference})} families), "
        f"held-out families {', '.join(sorted(GRID_HELDOUT))}: {len(validation)} validation, {len(test)} test")  # fmt: skip
    model_dir = build_tiny_model(where / "tiny", seed=seed)
    store = MemoryStore.open(where / "memory.db")
    base = LocalModel.load(model_dir)
    say(f"tiny executor built: {model_dir}")

    # Calibration: the untrained evaluation is needed anyway; one supervised step on a copy.
    progress.phase("calibrating")
    timed = time.time()
    untrained = await evaluate(test, LocalBackend(base), store, where / "snapshots", evaluation, "untrained")
    attempt_s = (time.time() - timed) / max(1, len(untrained.results))
    say(f"test success, untrained: {untrained.success:.2f}")
    imitation = examples(with_reference)
    threads = training_threads()  # the event loop waits while a stretch trains: every core
    # Two steps, timed by the second: the first also pays for copying the weights, allocating
    # the optimizer's state and waking the threads, and took twice a later step.
    timing = sft(base, imitation[:EXAMPLES_PER_STEP],
                 SFTSettings(max_epochs=2, examples_per_step=EXAMPLES_PER_STEP, threads=threads))  # fmt: skip
    step_s = timing.epochs[-1].seconds
    # The sandbox's part of an attempt: training tasks' references, as many at once as attempts.
    references = [task for task in with_reference for _ in range(2)][: len(untrained.results)]
    timed = time.time()
    await all_or_none(run_reference(task) for task in references)
    calibration = Calibration(
        attempt_s=attempt_s,
        step_s=step_s,
        sandbox_s=(time.time() - timed) / max(1, len(references)),
        reply_tokens=_mean(len(call.completion_ids) for t in store.trajectories.read() for call in t.calls),
        trained_reply_tokens=_mean(
            len(base.tokenizer.encode_text(example.target)) + 1 for example in imitation
        ),
    )
    cost = estimate(
        plan, calibration, imitation_examples=len(imitation), validation=len(validation), test=len(test)
    )
    say(cost.line())
    progress.plan(cost.total_s())

    progress.phase("warm start")
    warm_deadline = progress.started + cap_minutes * 30  # the safety cap leaves GRPO half of itself
    # The rate decays along a cosine over every epoch: at a constant 3e-3 the loss kept jumping
    # and the names the executor copies stayed half wrong, which GRPO never repaired.
    warm_settings = WarmStartSettings(
        sft=SFTSettings(max_epochs=plan.warm_max_epochs, learning_rate=3e-3, schedule="cosine",
                        examples_per_step=EXAMPLES_PER_STEP, seed=seed, threads=threads),
        patience=plan.warm_patience,
        min_epochs=plan.warm_min_epochs,
        evaluation=replace(evaluation, group_size=2),
        deadline=warm_deadline,
    )  # fmt: skip

    def on_epoch(epoch: int, success: float, loss: float) -> None:
        say(f"warm start epoch {epoch}: loss {loss:.3f}, validation success {success:.2f}")
        progress.done(cost.warm_epoch_s, step=f"epoch {epoch}/{plan.warm_max_epochs}")

    # The curve is measured on every validation task, twice each: cheap enough per epoch.
    warm = await warm_start(base, with_reference, validation, store, where, warm_settings, on_epoch=on_epoch)
    warm_epochs = len(warm.curve)
    cut_warm = warm_epochs < plan.warm_max_epochs and time.time() > warm_deadline
    say(f"warm start: best validation success {warm.best_success:.2f} at epoch {warm.best_epoch}")
    progress.replan(cost.total_s(warm_epochs))

    versions = ExecutorVersions(where)
    cycle_settings = CycleSettings(
        iterations=plan.grpo_steps,
        tasks_per_iteration=plan.tasks_per_step,
        replay=ReplaySettings(
            group_size=plan.group_size, executor=one_turn, concurrent_tasks=plan.concurrent_tasks
        ),
        evaluation=evaluation,
        # LoRA at 1e-4 (the default, for real models) barely moves a model this small. Replays
        # cost more than updates here, so each batch is trained on twice (the clip bounds it).
        train=TrainSettings(lora=LoraSettings(rank=8), learning_rate=2e-3, updates_per_batch=plan.updates_per_batch,
                            threads=threads),
        seed=seed,
        deadline=cap - GATE_RESERVE * cost.gate_s,
        guidance=GuidanceSettings() if plan.guidance else None,
    )  # fmt: skip
    # The gate as the nightly cycle runs it (parse failures and timeouts must not rise at all;
    # held-out replies are constrained, and close in time to parse), but fewer tasks in --quick.
    gate = replace(cycle_settings.gate, min_tasks=min(cycle_settings.gate.min_tasks, len(test)))
    cycle_settings = replace(cycle_settings, gate=gate)
    rewards: list[tuple[int, float]] = []
    probes: list[tuple[int, float]] = []  # test success per probe
    validated: list[tuple[int, float]] = []  # validation success per probe

    def on_iteration(i: int, reward: float, metrics: StepMetrics) -> None:
        rewards.append((i + 1, reward))
        say(f"GRPO iteration {i}: train reward {reward:.2f}, {metrics.line()}")
        progress.phase("GRPO")
        progress.done(cost.grpo_step_s, step=f"step {i + 1}/{plan.grpo_steps}", reward=reward)

    def on_probe(point: ProbePoint) -> None:
        probes.append((point.steps, point.curve.success))
        chosen = ""
        if point.validation is not None:
            validated.append((point.steps, point.validation.success))
            chosen = (
                f"validation success {point.validation.success:.2f}{' (best so far)' if point.kept else ''}, "
            )
        say(f"after {point.steps} GRPO steps: {chosen}test success {point.curve.success:.2f}")
        progress.done(cost.probe_s)

    def on_phase(name: str) -> None:
        if name == "gate":
            progress.phase("gate")

    # Probes replay validation and test tasks together, `probe_group` attempts each, with as many
    # attempts in flight as the gate's evaluation has.
    probing = replace(
        evaluation, group_size=plan.probe_group,
        concurrent_tasks=max(1, plan.concurrent_tasks * plan.eval_group // plan.probe_group),
    )  # fmt: skip
    result = await run_cycle(
        warm.model_dir, train, test, store, where, versions, cycle_settings, on_iteration=on_iteration,
        on_phase=on_phase,
        probe=Probe(test, plan.probe_every, on_probe, choose_on=validation, evaluation=probing)
        if plan.probe_every > 0 else None,
    )  # fmt: skip
    steps_done = len(result.steps)
    decision = result.decision
    gain = result.candidate.success - result.current.success
    report = report_cycle(
        where, result, cycle=1, model=warm.model_dir, tasks=len(train), previous=None,
        baseline=result.current.success,
    )  # fmt: skip
    candidate_step = steps_done if result.candidate_step is None else result.candidate_step
    test_curve = [(0, result.current.success), *probes]
    if not probes:  # no probes: the gate's evaluation of the last step is the curve's point
        test_curve.append((steps_done, result.candidate.success))
    curves = Curves(
        [(epoch, success) for epoch, success, _loss in warm.curve],
        warm.best_epoch,
        rewards,
        test_curve,
        TARGET_GAIN,
        validated,
        (candidate_step, result.candidate.success),
    )
    plot = plot_curves(where / "quickstart.png", curves)
    reached = steps_to_gain(test_curve, TARGET_GAIN)
    progress.phase("done")

    say("")
    say(f"test success (held-out families): untrained {untrained.success:.2f}, warm start {result.current.success:.2f}, "
        f"after GRPO {result.candidate.success:.2f} ({gain * 100:+.1f} points; target +{TARGET_GAIN * 100:.0f})")  # fmt: skip
    family_of = {task.id: task.family for task in test}.__getitem__
    before = success_by_kind(result.current.results, family_of)
    after = success_by_kind(result.candidate.results, family_of)
    say("by family (warm start -> after GRPO): "
        + ", ".join(f"{family} {before[family][0]:.2f} -> {after.get(family, (0.0, 0))[0]:.2f}" for family in before))  # fmt: skip
    say(f"candidate: the adapter after {candidate_step} of {steps_done} GRPO steps"
        + (f" (best validation success, {dict(validated)[candidate_step]:.2f})" if candidate_step in dict(validated) else ""))  # fmt: skip
    say(f"steps to +{TARGET_GAIN * 100:.0f} points: "
        + (f"{reached}" if reached is not None else f"not reached in {steps_done} steps")
        + f" (test success probed every {plan.probe_every} steps, {plan.probe_group} attempts a task)")  # fmt: skip
    say(f"gate: {'promoted ' + result.version.name if result.version else 'refused'}; "
        f"paired gain {decision.mean_diff:+.3f} over {len(test)} test tasks, "
        f"95% CI (tasks resampled) [{decision.ci_low:+.3f}, {decision.ci_high:+.3f}]")  # fmt: skip
    say("gate checks: " + "; ".join(decision.reasons))
    if cut_warm or steps_done < plan.grpo_steps:
        say(f"--minutes {cap_minutes:g} cut the run short: warm start {warm_epochs} epochs (plan: up to "
            f"{plan.warm_max_epochs}), GRPO {steps_done} of {plan.grpo_steps} steps. Fewer steps than the plan "
            "learn less: the gain above is below what this seed reaches; raise --minutes to run the whole plan.")  # fmt: skip
    say(f"plots: {plot} (curves), {report.plot} (the cycle's report)")
    say(f"everything: {where} ({time.time() - progress.started:.0f} s)")
    store.close()
    return 0


def _mean(values: Iterable[float]) -> float:
    collected = list(values)
    return sum(collected) / len(collected) if collected else 1.0
