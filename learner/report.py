"""The operator's report of one learning cycle: figures, a PNG plot, and one plain paragraph.

    report = write_report(data_dir, summary, progress)
    send(report.text)                   # mentions report.plot, the PNG's path

    report = report_cycle(data_dir, result, cycle=..., model=..., tasks=..., previous=...)
                                        # the same, for what run_cycle returned

Everything goes to `<data_dir>/learner/reports/cycle-NNNN/`: `figures.json` (the summary, the
gate decision and the curves), `progress.png` and `summary.txt`. The plot has held-out success
per cycle on the left, with the warm-start baseline as a dashed line when known, and the mean
training reward per step on the right (left out when there are no steps).

matplotlib draws through its Agg canvas on a `Figure` of its own: no pyplot, no global state, no
display needed, safe in a worker thread.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from learner.gate import GateDecision

if TYPE_CHECKING:
    from learner.cycle import CycleResult  # torch: only for the annotation


@dataclass(frozen=True)
class CycleSummary:
    cycle: int
    model: str  # the base model's directory or name
    tasks: int  # distinct training tasks replayed
    episodes: int  # episodes trained on
    steps: int  # optimizer steps
    train_reward: float | None  # mean reward of those episodes
    gate: GateDecision
    previous: str | None  # the version current before this cycle (None: the base model)
    version: str | None  # the version promoted, None when the gate refused
    secret_episodes: int = 0  # replayed episodes left out of training for holding a secret


@dataclass(frozen=True)
class Progress:
    """The curves to draw; x values ascending."""

    heldout: Sequence[tuple[float, float]]  # (cycle, held-out success of the executor in use)
    train_reward: Sequence[tuple[float, float]] = field(default_factory=list)  # (step, reward)
    baseline: float | None = None  # the warm-start executor's held-out success


@dataclass(frozen=True)
class CycleReport:
    text: str
    plot: Path
    figures: Path


def write_report(data_dir: str | Path, summary: CycleSummary, progress: Progress) -> CycleReport:
    directory = Path(data_dir).expanduser() / "learner" / "reports" / f"cycle-{summary.cycle:04d}"
    directory.mkdir(parents=True, exist_ok=True)
    plot = plot_progress(directory / "progress.png", progress)
    text = summary_text(summary, plot)
    figures = directory / "figures.json"
    figures.write_text(json.dumps(_figures(summary, progress), indent=2) + "\n", encoding="utf-8")
    (directory / "summary.txt").write_text(text + "\n", encoding="utf-8")
    return CycleReport(text, plot, figures)


def report_cycle(
    data_dir: str | Path,
    result: CycleResult,
    *,
    cycle: int,
    model: str | Path,
    tasks: int,
    previous: str | None,
    baseline: float | None = None,
) -> CycleReport:
    """`write_report` for a finished `run_cycle`: its training figures, the gate's decision, and
    held-out success before (x = 0) and after (x = 1) as the curve."""
    summary = CycleSummary(
        cycle=cycle,
        model=str(model),
        tasks=tasks,
        episodes=sum(m.rows for m in result.steps),
        steps=len(result.steps),
        train_reward=result.train_reward[-1][1] if result.train_reward else None,
        gate=result.decision,
        previous=previous,
        version=None if result.version is None else result.version.name,
        secret_episodes=result.secret_episodes,
    )
    progress = Progress(
        heldout=[(0.0, result.current.success), (1.0, result.candidate.success)],
        train_reward=[(float(i), r) for i, r in result.train_reward],
        baseline=baseline,
    )
    return write_report(data_dir, summary, progress)


def plot_progress(path: Path, progress: Progress) -> Path:
    """Draw held-out success (and training reward, when there is any) into a PNG at `path`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    panels = 2 if progress.train_reward else 1
    figure = Figure(figsize=(5.5 * panels, 4), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, panels, squeeze=False)[0]

    left = axes[0]
    if progress.heldout:
        cycles, success = zip(*progress.heldout, strict=True)
        left.plot(cycles, success, marker="o", label="executor in use")
    if progress.baseline is not None:
        left.axhline(progress.baseline, linestyle="--", color="grey", label="warm-start baseline")
    left.set(xlabel="cycle", ylabel="held-out success", ylim=(0, 1), title="Held-out success")
    left.xaxis.set_major_locator(MaxNLocator(integer=True))
    left.legend(loc="lower right")
    left.grid(alpha=0.3)

    if progress.train_reward:
        steps, reward = zip(*progress.train_reward, strict=True)
        right = axes[1]
        right.plot(steps, reward, color="tab:orange")
        right.set(xlabel="training step", ylabel="mean reward", title="Training reward")
        right.grid(alpha=0.3)

    figure.savefig(path, format="png")
    return path


def summary_text(summary: CycleSummary, plot: Path | None = None) -> str:
    """One paragraph for the operator's chat: what was trained, the gate's numbers, the outcome."""
    gate = summary.gate
    previous = summary.previous or "the base model"
    reward = ""
    if summary.train_reward is not None:
        reward = f" (mean training reward {summary.train_reward:.2f})"
    parts = [
        f"Learning cycle {summary.cycle} trained the executor ({summary.model}) with GRPO on "
        f"{summary.episodes} episodes of {summary.tasks} tasks in {summary.steps} steps{reward}.",
        f"On {gate.tasks} held-out tasks ({gate.pairs} task-seed pairs), success went from "
        f"{gate.mean_current:.2f} ({previous}) to {gate.mean_candidate:.2f} (candidate): "
        f"{gate.mean_diff:+.2f}, {gate.confidence:.0%} interval [{gate.ci_low:+.2f}, {gate.ci_high:+.2f}] "
        f"(tasks resampled); parse failures {gate.parse_failures[0]} -> {gate.parse_failures[1]}, "
        f"timeouts {gate.timeouts[0]} -> {gate.timeouts[1]}.",
    ]
    if gate.regression is not None:
        suite = gate.regression
        parts.append(
            f"On the regression suite ({suite.tasks} tasks): {suite.mean_current:.2f} -> "
            f"{suite.mean_candidate:.2f}, interval [{suite.ci_low:+.2f}, {suite.ci_high:+.2f}] "
            f"(margin {gate.non_inferiority_margin or 0:.2f})."
        )
    if summary.secret_episodes:
        parts.append(
            f"{summary.secret_episodes} replayed episodes printed a secret and were left out of training."
        )
    if summary.version is not None:
        parts.append(f"Promoted as {summary.version}; {previous} is kept for `temper executor rollback`.")
    else:
        refused = [r.removeprefix("refused: ") for r in gate.reasons if r.startswith("refused")]
        why = "; ".join(refused) or "the gate refused"
        parts.append(f"Not promoted ({why}); the executor stays on {previous}.")
    if plot is not None:
        parts.append(f"Plot: {plot}")
    return " ".join(parts)


def _figures(summary: CycleSummary, progress: Progress) -> dict[str, Any]:
    return {
        **{name: value for name, value in asdict(summary).items() if name != "gate"},
        "gate": summary.gate.as_dict(),
        "heldout": [list(point) for point in progress.heldout],
        "train_reward": [list(point) for point in progress.train_reward],
        "baseline": progress.baseline,
    }
