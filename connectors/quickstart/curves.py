"""The quickstart's plot, for an RL engineer: what the warm start reached, and what GRPO added.

Left: the warm start's validation success per epoch (the epoch kept is marked). Right: GRPO's
training reward per step, faint, because at 16 tasks x 8 attempts a step's mean is noise, with
its moving average over `window` steps drawn bold; held-out validation and test success at each
probe, the candidate chosen on validation with its gate evaluation (a star); the warm start's
test success and the +25-point target as dashed lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MOVING_AVERAGE_STEPS = 10


@dataclass(frozen=True)
class Curves:
    warm: Sequence[tuple[int, float]]  # (epoch, validation success)
    warm_best_epoch: int
    train_reward: Sequence[tuple[int, float]]  # (GRPO step, 1-based, mean reward)
    test: Sequence[tuple[int, float]]  # (GRPO steps done, test success); step 0: the warm start
    target_gain: float
    validation: Sequence[tuple[int, float]] = ()  # (GRPO steps done, validation success) per probe
    candidate: tuple[int, float] | None = None  # (its steps, the gate's test success of it)


def moving_average(values: Sequence[float], window: int) -> list[float]:
    """The mean of each value and the up to `window - 1` before it."""
    averaged, total = [], 0.0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        averaged.append(total / min(i + 1, window))
    return averaged


def steps_to_gain(test: Sequence[tuple[int, float]], gain: float) -> int | None:
    """The first probe's step whose test success is `gain` above step 0's; None if none is."""
    if not test:
        return None
    baseline = test[0][1]
    return next((step for step, success in test[1:] if success >= baseline + gain - 1e-9), None)


def plot_curves(path: Path, curves: Curves, window: int = MOVING_AVERAGE_STEPS) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(11, 4), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    warm_axes, grpo_axes = figure.subplots(1, 2)

    if curves.warm:
        epochs, success = zip(*curves.warm, strict=True)
        warm_axes.plot(epochs, success, marker="o", markersize=3, label="validation success")
        best = dict(curves.warm).get(curves.warm_best_epoch)
        if best is not None:
            warm_axes.plot([curves.warm_best_epoch], [best], marker="*", markersize=12, color="tab:red",
                           linestyle="none", label=f"kept: epoch {curves.warm_best_epoch}")  # fmt: skip
    warm_axes.set(xlabel="epoch", ylabel="held-out success", ylim=(0, 1), title="Warm start (imitation)")
    warm_axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    warm_axes.legend(loc="lower right")
    warm_axes.grid(alpha=0.3)

    if curves.train_reward:
        steps, reward = zip(*curves.train_reward, strict=True)
        grpo_axes.plot(
            steps, reward, color="tab:orange", alpha=0.3, linewidth=1, label="train reward (per step)"
        )
        grpo_axes.plot(steps, moving_average(reward, window), color="tab:orange", linewidth=2,
                       label=f"train reward ({window}-step average)")  # fmt: skip
    if curves.validation:
        steps, success = zip(*curves.validation, strict=True)
        grpo_axes.plot(steps, success, marker="s", markersize=4, color="tab:purple", alpha=0.7,
                       label="validation success (chooses)")  # fmt: skip
    if curves.test:
        steps, success = zip(*curves.test, strict=True)
        grpo_axes.plot(steps, success, marker="o", color="tab:blue", label="test success (held-out families)")
        grpo_axes.axhline(success[0], linestyle="--", color="grey", label="warm start, test")
        target = success[0] + curves.target_gain
        if target <= 1:
            grpo_axes.axhline(target, linestyle=":", color="tab:green",
                              label=f"+{curves.target_gain * 100:.0f} points")  # fmt: skip
    if curves.candidate is not None:
        step, success = curves.candidate
        grpo_axes.plot([step], [success], marker="*", markersize=14, color="tab:red", linestyle="none",
                       label=f"candidate: step {step}, at the gate")  # fmt: skip
    grpo_axes.set(xlabel="GRPO step", ylabel="success / reward", ylim=(0, 1), title="GRPO")
    grpo_axes.legend(loc="lower right", fontsize="small")
    grpo_axes.grid(alpha=0.3)

    figure.savefig(path, format="png")
    return path
