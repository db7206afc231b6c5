"""learner.report: the cycle's PNG plot, figures.json and the operator's paragraph."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from learner.gate import GateDecision, HeldoutResult, decide
from learner.report import CycleSummary, Progress, plot_progress, report_cycle, summary_text, write_report

if TYPE_CHECKING:
    from learner.cycle import CycleResult

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def gate(after: float) -> GateDecision:
    return decide(
        [HeldoutResult(f"t{i}", 0, float(i < 6)) for i in range(20)],
        [HeldoutResult(f"t{i}", 0, float(i < after * 20)) for i in range(20)],
    )


def summary(version: str | None, after: float) -> CycleSummary:
    return CycleSummary(
        cycle=3, model="/models/tiny", tasks=16, episodes=128, steps=24, train_reward=0.47,
        gate=gate(after), previous="v2", version=version,
    )  # fmt: skip


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    assert data[-12:] == b"\x00\x00\x00\x00IEND\xaeB`\x82"  # complete: ends with its IEND chunk
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_write_report_leaves_a_png_figures_and_the_paragraph(tmp_path: Path) -> None:
    progress = Progress(
        heldout=[(0, 0.30), (1, 0.30), (2, 0.45), (3, 0.70)],
        train_reward=[(step, 0.2 + 0.01 * step) for step in range(24)],
        baseline=0.30,
    )
    report = write_report(tmp_path, summary("v3", 0.7), progress)
    assert report.plot == tmp_path / "learner" / "reports" / "cycle-0003" / "progress.png"
    width, height = png_size(report.plot)
    assert (width, height) == (1100, 400)  # two panels of 5.5 x 4 inches at 100 dpi
    figures = json.loads(report.figures.read_text())
    assert figures["version"] == "v3" and figures["gate"]["promote"] is True
    assert figures["baseline"] == 0.30 and figures["heldout"][-1] == [3, 0.70]
    assert (report.plot.parent / "summary.txt").read_text() == report.text + "\n"
    assert report.text == (
        "Learning cycle 3 trained the executor (/models/tiny) with GRPO on 128 episodes of 16 tasks "
        "in 24 steps (mean training reward 0.47). On 20 held-out tasks (20 task-seed pairs), success "
        "went from 0.30 (v2) to 0.70 (candidate): +0.40, 95% interval "
        f"[{figures['gate']['ci_low']:+.2f}, {figures['gate']['ci_high']:+.2f}] (tasks resampled); "
        "parse failures 0 -> 0, "
        "timeouts 0 -> 0. Promoted as v3; v2 is kept for `temper executor rollback`. "
        f"Plot: {report.plot}"
    )


def test_the_regression_suite_has_its_own_sentence(tmp_path: Path) -> None:
    regression = (
        [HeldoutResult(f"r{i}", 0, 1.0) for i in range(12)],
        [HeldoutResult(f"r{i}", 0, float(i != 0)) for i in range(12)],
    )
    decision = decide(
        [HeldoutResult(f"t{i}", 0, float(i < 6)) for i in range(20)],
        [HeldoutResult(f"t{i}", 0, float(i < 14)) for i in range(20)],
        regression=regression,
    )
    text = summary_text(replace(summary("v3", 0.7), gate=decision))
    assert "On the regression suite (12 tasks): 1.00 -> 0.92, interval [" in text
    assert "(margin 0.05)." in text


def test_a_refused_cycle_says_why_and_what_stays(tmp_path: Path) -> None:
    text = summary_text(summary(None, 0.3))
    assert "Not promoted (mean improvement +0.000" in text
    assert text.endswith("lower bound not above 0); the executor stays on v2.")


def test_held_out_success_alone_is_one_panel(tmp_path: Path) -> None:
    path = plot_progress(tmp_path / "only.png", Progress(heldout=[(1, 0.2), (2, 0.4)]))
    assert png_size(path) == (550, 400)


def cycle_result(tmp_path: Path, rows: list[int], version: str | None) -> CycleResult:
    from learner.cycle import CycleResult  # torch
    from learner.evaluation import Evaluation
    from learner.train import StepMetrics
    from learner.versions import Version, VersionMeta

    def step(number: int, rows: int) -> StepMetrics:
        return StepMetrics(
            step=number, loss=0.1, reward_mean=0.25 * number, approx_kl=0.0, kl_ref=None, clip_fraction=0.0,
            entropy=1.0, zero_variance_fraction=0.0, rows=rows, tokens=100, trained_tokens=50,
            grad_norm=1.0, seconds=1.0, secret_episodes=2 if number == 1 else 0,
        )  # fmt: skip

    def evaluation(success: float) -> Evaluation:
        return Evaluation([HeldoutResult(f"t{i}", 0, float(i < success * 20)) for i in range(20)])

    return CycleResult(
        steps=[step(n, r) for n, r in enumerate(rows, 1)],
        train_reward=[(n, 0.25 * n) for n in range(1, len(rows) + 1)],
        current=evaluation(0.3),
        candidate=evaluation(0.7),
        decision=gate(0.7),
        version=None if version is None else Version(version, tmp_path / version, VersionMeta("/m", "")),
        adapter_dir=tmp_path / "adapter",
    )


def test_report_cycle_reports_what_the_cycle_returned(tmp_path: Path) -> None:
    result = cycle_result(tmp_path, rows=[40, 56], version="v3")
    report = report_cycle(
        tmp_path, result, cycle=3, model=Path("/models/tiny"), tasks=16, previous="v2", baseline=0.3
    )
    figures = json.loads(report.figures.read_text())
    del figures["gate"]
    assert figures == {
        "cycle": 3, "model": "/models/tiny", "tasks": 16, "episodes": 96, "steps": 2, "previous": "v2",
        "version": "v3", "heldout": [[0.0, 0.3], [1.0, 0.7]], "train_reward": [[1.0, 0.25], [2.0, 0.5]],
        "baseline": 0.3, "secret_episodes": 2,
    }  # fmt: skip
    assert report.text.startswith(
        "Learning cycle 3 trained the executor (/models/tiny) with GRPO on 96 episodes of 16 tasks "
        "in 2 steps (mean training reward 0.50). On 20 held-out tasks (20 task-seed pairs), success "
        "went from 0.30 (v2) to 0.70 (candidate): +0.40"
    )
    assert "2 replayed episodes printed a secret and were left out of training." in report.text
    assert png_size(report.plot) == (1100, 400)


def test_report_cycle_of_a_cycle_that_trained_nothing(tmp_path: Path) -> None:
    report = report_cycle(
        tmp_path, cycle_result(tmp_path, rows=[], version=None), cycle=1, model="base", tasks=0, previous=None
    )
    figures = json.loads(report.figures.read_text())
    assert (figures["episodes"], figures["steps"], figures["version"], figures["baseline"]) == (
        0,
        0,
        None,
        None,
    )
    assert "in 0 steps. On 20" in report.text and report.text.count("the base model") == 2
    assert png_size(report.plot) == (550, 400)  # no training curve: one panel
