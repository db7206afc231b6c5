"""learner.report: the cycle's PNG plot, figures.json and the operator's paragraph."""

from __future__ import annotations

import json
from pathlib import Path

from learner.gate import GateDecision, HeldoutResult, decide
from learner.report import CycleSummary, Progress, plot_progress, summary_text, write_report

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
        "in 24 steps (mean training reward 0.47). On 20 held-out task-seed pairs, success went from "
        "0.30 (v2) to 0.70 (candidate): +0.40, 95% interval "
        f"[{figures['gate']['ci_low']:+.2f}, {figures['gate']['ci_high']:+.2f}]; parse failures 0 -> 0, "
        "timeouts 0 -> 0. Promoted as v3; v2 is kept for `temper executor rollback`. "
        f"Plot: {report.plot}"
    )


def test_a_refused_cycle_says_why_and_what_stays(tmp_path: Path) -> None:
    text = summary_text(summary(None, 0.3))
    assert "Not promoted (mean improvement +0.000" in text
    assert text.endswith("lower bound not above 0); the executor stays on v2.")


def test_held_out_success_alone_is_one_panel(tmp_path: Path) -> None:
    path = plot_progress(tmp_path / "only.png", Progress(heldout=[(1, 0.2), (2, 0.4)]))
    assert png_size(path) == (550, 400)
