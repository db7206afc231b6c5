"""The quickstart's plan, its estimate, its curves, and the safety cap cutting a run short."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from connectors.quickstart import Calibration, QuickstartPlan, run_quickstart
from connectors.quickstart.curves import Curves, moving_average, plot_curves, steps_to_gain
from connectors.quickstart.plan import estimate
from connectors.quickstart.progress import QuickstartProgress


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_estimate_adds_up_the_plans_work_from_the_calibration() -> None:
    plan = QuickstartPlan(warm_max_epochs=10, warm_min_epochs=4, warm_patience=3, grpo_steps=20,
                          tasks_per_step=4, group_size=8, updates_per_batch=2, eval_group=4, probe_every=5)  # fmt: skip
    cost = estimate(plan, Calibration(attempt_s=0.1, step_s=0.5), imitation_examples=40, validation=6, test=6)
    assert cost.warm_epoch_s == pytest.approx(3 * 0.5 + 6 * 2 * 0.1)  # 3 steps, 12 attempts
    assert cost.grpo_step_s == pytest.approx(32 * 0.1 + 2 * 2 * 0.5)  # 32 rollouts, 2 updates x 2 steps
    # A probe: validation and test tasks, probe_group (2) attempts each; the gate: test, eval_group.
    assert cost.probe_s == pytest.approx(12 * 2 * 0.1) and cost.gate_s == pytest.approx(48 * 0.1)
    assert plan.probes() == 4  # after steps 5, 10, 15 and 20 (the last step is probed: it may be chosen)
    assert replace(plan, grpo_steps=22).probes() == 5  # ... and after step 22
    assert replace(plan, probe_every=0).probes() == 0
    assert cost.total_s() == pytest.approx(10 * 2.7 + 20 * 5.2 + 4 * 2.4 + 4.8)
    assert cost.total_s(4) < cost.total_s()
    assert "estimated time on this machine" in cost.line() and "4-10 epochs" in cost.line()
    # Without patience the warm start runs every epoch: one figure, not a range.
    whole = estimate(replace(plan, warm_patience=None), Calibration(attempt_s=0.1, step_s=0.5),
                     imitation_examples=40, validation=6, test=6)  # fmt: skip
    assert whole.warm_epochs == (10, 10) and "(warm start 10 epochs of" in whole.line()
    assert " to " not in whole.line().split("(")[0]


def test_a_trained_attempt_costs_the_sandbox_and_sampling_for_shorter_replies() -> None:
    # Untrained: 96-token replies, 0.5 s an attempt of which 0.1 s in the sandbox. Trained
    # replies are a quarter as long: the sampling part shrinks to a quarter.
    calibration = Calibration(
        attempt_s=0.5, step_s=1.0, sandbox_s=0.1, reply_tokens=96, trained_reply_tokens=24
    )
    assert calibration.trained_attempt_s == pytest.approx(0.1 + 0.4 / 4)
    cost = estimate(QuickstartPlan(), calibration, imitation_examples=320, validation=24, test=24)
    assert cost.probe_s == pytest.approx(48 * 2 * 0.2)
    # Replies never grow past what was measured; a sandbox slower than the attempt is the attempt.
    longer = Calibration(attempt_s=0.5, step_s=1.0, sandbox_s=0.1, reply_tokens=10, trained_reply_tokens=40)
    assert longer.trained_attempt_s == pytest.approx(0.5)
    slow_sandbox = Calibration(
        attempt_s=0.5, step_s=1.0, sandbox_s=0.9, reply_tokens=96, trained_reply_tokens=24
    )
    assert slow_sandbox.trained_attempt_s == pytest.approx(0.5)


def test_the_moving_average_smooths_over_the_window() -> None:
    assert moving_average([0.0, 1.0, 0.0, 1.0], 2) == [0.0, 0.5, 0.5, 0.5]
    assert moving_average([1.0, 0.0, 0.0], 10) == [1.0, 0.5, pytest.approx(1 / 3)]


def test_steps_to_gain_is_the_first_probe_that_reaches_it() -> None:
    curve = [(0, 0.30), (10, 0.40), (20, 0.56), (30, 0.50), (40, 0.70)]
    assert steps_to_gain(curve, 0.25) == 20
    assert steps_to_gain(curve, 0.45) is None
    assert steps_to_gain([], 0.25) is None


def test_the_plot_draws_both_panels(tmp_path: Path) -> None:
    curves = Curves(
        [(1, 0.1), (2, 0.3)], 2, [(i, (i % 3) / 3) for i in range(1, 31)], [(0, 0.3), (30, 0.6)], 0.25
    )
    png = plot_curves(tmp_path / "q.png", curves)
    assert png.read_bytes().startswith(b"\x89PNG")


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_safety_cap_cuts_the_run_short_and_says_so(tmp_path: Path) -> None:
    out = io.StringIO()
    progress = QuickstartProgress(Console(file=out, width=200))
    with progress:
        # A cap of a second: the warm start stops after its first epoch, GRPO takes no step.
        code = await run_quickstart(tmp_path, 1, QuickstartPlan.quick(), 1 / 60, progress)
    text = out.getvalue()
    assert code == 0
    assert "warm start epoch 1:" in text and "warm start epoch 2:" not in text
    assert "GRPO iteration" not in text
    assert "--minutes 0.0166667 cut the run short: warm start 1 epochs" in text
    assert "GRPO 0 of 2 steps" in text
    assert (tmp_path / "quickstart.png").read_bytes().startswith(b"\x89PNG")
