"""The week bench's figures: what one request and one day measured, the table, the summary, the PNG.

    day = DayFigures.of(day_number, outcomes, ...)   # one row of the table
    print_table(days); print_summary(days, ...)      # `name: value` lines after the table
    plot_week(days, path)                            # the curves, with matplotlib (the learn extra)

Definitions, per day:
- terminal tasks: requests whose turn called `terminal_task` (an executor episode was recorded);
  the route of each is read from its executor episode's calls (a call whose model starts with
  "planner:" is the planner route, anything else the executor model);
- executor share: terminal tasks that took the executor route / terminal tasks;
- success: the user's thumbs up (the family's verifier on the workspace after the turn) over
  requests, overall and per route;
- planner tokens per task: every token the planner was sent and returned while the day's
  requests were served (its turns and, on the planner route, executor work) / requests;
- executor tokens per task: prompt + completion tokens of the executor model's calls / requests;
- reply latency: a cheap chat message's time to its reply, idle (before the night) and while
  the night's job runs; p50 and p99.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Route = Literal["planner", "executor", "none"]


@dataclass(frozen=True)
class RequestOutcome:
    family: str
    route: Route  # "none": the turn did no terminal work
    passed: bool
    executor_tokens: int
    crashed: bool = False


@dataclass(frozen=True)
class NightFigures:
    idle_ms: list[float]
    training_ms: list[float]
    decision: str  # "promoted <version>", "refused", or "crashed"
    seconds: float


@dataclass(frozen=True)
class DayFigures:
    day: int
    outcomes: list[RequestOutcome]
    planner_tokens: int
    version: str  # the executor version in service during the day
    night: NightFigures | None  # the night after the day; None after the last day

    @property
    def requests(self) -> int:
        return len(self.outcomes)

    @property
    def terminal(self) -> list[RequestOutcome]:
        return [o for o in self.outcomes if o.route != "none"]

    @property
    def executor_share(self) -> float:
        terminal = self.terminal
        return sum(o.route == "executor" for o in terminal) / len(terminal) if terminal else 0.0

    @property
    def success(self) -> float:
        return _rate([o.passed for o in self.outcomes])

    def success_on(self, route: Route) -> float | None:
        chosen = [o.passed for o in self.outcomes if o.route == route]
        return _rate(chosen) if chosen else None

    @property
    def planner_tokens_per_task(self) -> float:
        return self.planner_tokens / self.requests if self.requests else 0.0

    @property
    def executor_tokens_per_task(self) -> float:
        return sum(o.executor_tokens for o in self.outcomes) / self.requests if self.requests else 0.0

    @property
    def crashes(self) -> int:
        return sum(o.crashed for o in self.outcomes) + (
            self.night is not None and self.night.decision == "crashed"
        )


def percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def print_table(days: Sequence[DayFigures]) -> None:
    header = (
        "day  requests  exec_share  success  planner_ok  executor_ok  planner_tok/task  exec_tok/task"
        "  idle_p50/p99_ms  training_p50/p99_ms  gate  version"
    )
    print(header)
    for d in days:
        night = d.night
        idle = training = "-"
        if night is not None:
            idle = f"{percentile(night.idle_ms, 0.5):.0f}/{percentile(night.idle_ms, 0.99):.0f}"
            training = f"{percentile(night.training_ms, 0.5):.0f}/{percentile(night.training_ms, 0.99):.0f}"
        print(
            f"{d.day:>3}  {d.requests:>8}  {d.executor_share:>10.2f}  {d.success:>7.2f}"
            f"  {_maybe(d.success_on('planner')):>10}  {_maybe(d.success_on('executor')):>11}"
            f"  {d.planner_tokens_per_task:>16.0f}  {d.executor_tokens_per_task:>13.0f}"
            f"  {idle:>15}  {training:>19}  {night.decision if night else '-'}  {d.version}"
        )


def print_summary(days: Sequence[DayFigures], unsandboxed: int, crashes: int) -> None:
    first, last = days[0], days[-1]
    nights = [d.night for d in days if d.night is not None]
    idle = [ms for n in nights for ms in n.idle_ms]
    training = [ms for n in nights for ms in n.training_ms]
    reduction = (
        1 - last.planner_tokens_per_task / first.planner_tokens_per_task
        if first.planner_tokens_per_task
        else 0.0
    )
    ratio = percentile(training, 0.5) / percentile(idle, 0.5) if idle and training else float("nan")
    print(f"final_executor_share: {last.executor_share:.3f}")
    print(f"final_success: {last.success:.3f}")
    print(f"day1_success: {first.success:.3f}")
    print(f"planner_tokens_per_task_reduction: {reduction:.3f}")
    print(f"training_latency_p50_ratio: {ratio:.2f}")
    print(f"unsandboxed_commands: {unsandboxed}")
    print(f"crashes: {crashes}")


def plot_week(days: Sequence[DayFigures], path: Path) -> Path:
    """Executor share and success (left), planner and executor tokens per task (right), by day."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(11, 4), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    left, right = figure.subplots(1, 2)
    numbers = [d.day for d in days]
    left.plot(numbers, [d.executor_share for d in days], marker="o", label="executor share")
    left.plot(numbers, [d.success for d in days], marker="s", label="success (all)")
    routes: tuple[tuple[Route, str], ...] = (("planner", ":"), ("executor", "--"))
    for route, style in routes:
        rates = [d.success_on(route) for d in days]
        shown = [(n, r) for n, r in zip(numbers, rates, strict=True) if r is not None]
        if shown:
            left.plot(
                *zip(*shown, strict=True), linestyle=style, marker=".", label=f"success ({route} route)"
            )
    left.set(xlabel="day", ylabel="fraction", ylim=(-0.02, 1.02), title="Routing and success")
    left.legend(loc="best", fontsize="small")
    right.plot(numbers, [d.planner_tokens_per_task for d in days], marker="o", label="planner")
    right.plot(numbers, [d.executor_tokens_per_task for d in days], marker="s", label="executor")
    right.set(xlabel="day", ylabel="tokens per task", title="Tokens per task")
    right.legend(loc="best", fontsize="small")
    for axes in (left, right):
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.grid(alpha=0.3)
    figure.savefig(path, format="png")
    return path


def _rate(flags: Sequence[bool]) -> float:
    return statistics.fmean(flags) if flags else 0.0


def _maybe(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
