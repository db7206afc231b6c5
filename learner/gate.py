"""The promotion gate: is the candidate executor better than the current one on held-out tasks?

    decision = decide(current_results, candidate_results)   # one HeldoutResult per (task, seed)
    decision = decide(current_results, candidate_results, regression=(current_reg, candidate_reg))
    if decision.promote: ...

Both executors ran the same frozen held-out tasks with the same seeds, so results pair up by
(task, seed) and the question is about the paired differences `candidate - current`. A task's
attempts are not independent evidence (the same instruction, the same workspace), so every
interval is a cluster bootstrap over *tasks*: each of `resamples` resamples (drawn from
`random.Random(rng_seed)`) picks as many tasks as there are, with replacement, takes all the
pairs of each task picked, and computes their mean difference; the bounds are the
`(1 - confidence) / 2` and `(1 + confidence) / 2` quantiles of those means (2.5% and 97.5% for
95%). A set *improves* when it holds at least `min_tasks` distinct tasks (a handful
of lucky tasks is no evidence; with three tasks that all improve, every resample agrees and the
interval collapses to a point) and its lower bound is above 0; it is *not worse* when its lower
bound is above `-non_inferiority_margin`.

With one set (the held-out tasks), the gate promotes when all of these hold:

1. at least `min_tasks` tasks;
2. the lower bound is above 0;
3. parse failures do not rise, and neither do timeouts (below).

With two sets, `regression=(current, candidate)` adds a frozen regression set to the held-out
set (in the nightly cycle, the held-out set is a time split of the user's own tasks: the latest,
never trained on). The gate promotes when one set improves and the other is not worse:
(held-out improves and regression is not worse) or (held-out is not worse and regression
improves). An executor near 100% on one set can then still be promoted for improving on the
other, and never when it forgets. A set that improves is also not worse (the margin is >= 0),
so the rule is these criteria, all of which must hold:

1. the held-out set is not worse;
2. the regression set is not worse;
3. at least one set improves (`min_tasks` applies to the set that improves);
4. parse failures do not rise, and neither do timeouts, over all pairs of both sets.

Parse failures and timeouts: for each kind, the candidate's total exceeds the current's by at
most `floor(failure_tolerance * pairs)`. The default tolerance 0 means any increase at all
blocks the promotion. Each criterion leaves one line in `reasons`, "ok: ..." or "refused: ...",
with its figures.

Pure Python and deterministic: the same results give the same decision, bit for bit, whatever
their order.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from statistics import fmean
from typing import Any


class GateError(ValueError):
    """The results cannot be compared: they do not cover the same (task, seed) pairs."""


@dataclass(frozen=True)
class HeldoutResult:
    """One executor's outcome on one held-out task run with one seed."""

    task: str
    seed: int
    reward: float  # success as 0/1, or the verifier's reward
    parse_failures: int = 0  # replies that were not a valid action
    timeouts: int = 0  # commands that ran past their time limit


Pair = tuple[HeldoutResult, HeldoutResult]  # (current, candidate) on one (task, seed)


@dataclass(frozen=True)
class GateSettings:
    resamples: int = 2000
    confidence: float = 0.95
    rng_seed: int = 0
    min_tasks: int = 10  # distinct tasks a set needs before its improvement counts
    failure_tolerance: float = 0.0  # extra parse failures (or timeouts) allowed, per pair
    non_inferiority_margin: float = 0.05  # how far below 0 a "not worse" lower bound may reach

    def __post_init__(self) -> None:
        if self.resamples < 100:
            raise ValueError(f"resamples must be at least 100, got {self.resamples}")
        if not 0.5 < self.confidence < 1:
            raise ValueError(f"confidence must be in (0.5, 1), got {self.confidence}")
        if self.min_tasks < 2:
            raise ValueError(f"min_tasks must be at least 2, got {self.min_tasks}")
        if self.failure_tolerance < 0:
            raise ValueError(f"failure_tolerance must be >= 0, got {self.failure_tolerance}")
        if not 0 <= self.non_inferiority_margin < 1:
            raise ValueError(f"non_inferiority_margin must be in [0, 1), got {self.non_inferiority_margin}")


@dataclass(frozen=True)
class SetComparison:
    """The paired comparison on one set of held-out tasks."""

    tasks: int  # distinct tasks
    pairs: int  # (task, seed) pairs
    mean_current: float
    mean_candidate: float
    mean_diff: float  # candidate - current, over all pairs
    ci_low: float  # task-level bootstrap bounds on mean_diff at the settings' confidence
    ci_high: float


@dataclass(frozen=True)
class GateDecision:
    """The decision and its figures. The flat figures are the held-out set's; `regression` holds
    the regression set's when there was one; failures and timeouts are totals over both."""

    promote: bool
    tasks: int
    pairs: int
    mean_current: float
    mean_candidate: float
    mean_diff: float  # candidate - current
    ci_low: float  # bootstrap bounds on mean_diff at `confidence`
    ci_high: float
    confidence: float
    parse_failures: tuple[int, int]  # totals: (current, candidate)
    timeouts: tuple[int, int]
    reasons: list[str] = field(default_factory=list)  # one line per criterion, passed or not
    regression: SetComparison | None = None
    non_inferiority_margin: float | None = None  # the margin applied; None with one set

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON types, for meta.json and reports."""
        data = asdict(self)
        data["parse_failures"], data["timeouts"] = list(self.parse_failures), list(self.timeouts)
        return data


def decide(
    current: Iterable[HeldoutResult],
    candidate: Iterable[HeldoutResult],
    settings: GateSettings = GateSettings(),
    regression: tuple[Iterable[HeldoutResult], Iterable[HeldoutResult]] | None = None,
) -> GateDecision:
    """Compare the two executors' results pair by pair on the held-out set, and on the
    regression set when given as `(current, candidate)`; see the module docstring for the rule.
    Raises GateError unless, in each set, both sides cover exactly the same (task, seed) pairs,
    each once."""
    heldout_pairs = _paired(current, candidate, "held-out")
    heldout = compare(heldout_pairs, settings)
    pairs = list(heldout_pairs)
    if regression is None:
        above = "above" if heldout.ci_low > 0 else "not above"
        checks = [
            (_enough(heldout, settings), f"{_count(heldout)} (at least {settings.min_tasks} tasks needed)"),
            (heldout.ci_low > 0, f"{_interval(heldout, settings)}: lower bound {above} 0"),
        ]
        comparison = None
    else:
        regression_pairs = _paired(*regression, "regression")
        comparison = compare(regression_pairs, settings)
        pairs += regression_pairs
        named = [("held-out", heldout), ("regression", comparison)]
        checks = [_not_worse(name, figures, settings) for name, figures in named]
        checks.append(_one_improves(named, settings))
    failures = (sum(a.parse_failures for a, _ in pairs), sum(b.parse_failures for _, b in pairs))
    timeouts = (sum(a.timeouts for a, _ in pairs), sum(b.timeouts for _, b in pairs))
    allowed = math.floor(settings.failure_tolerance * len(pairs))
    checks += [_no_rise("parse failures", failures, allowed), _no_rise("timeouts", timeouts, allowed)]
    return GateDecision(
        promote=all(passed for passed, _ in checks),
        **asdict(heldout),
        confidence=settings.confidence,
        parse_failures=failures,
        timeouts=timeouts,
        reasons=[("ok: " if passed else "refused: ") + line for passed, line in checks],
        regression=comparison,
        non_inferiority_margin=None if regression is None else settings.non_inferiority_margin,
    )


def compare(pairs: Sequence[Pair], settings: GateSettings = GateSettings()) -> SetComparison:
    """The figures of one set of (current, candidate) pairs, its interval resampled by task."""
    by_task: dict[str, list[float]] = defaultdict(list)
    for before, after in pairs:
        by_task[before.task].append(after.reward - before.reward)
    ci_low, ci_high = bootstrap_interval([by_task[task] for task in sorted(by_task)], settings)
    return SetComparison(
        tasks=len(by_task),
        pairs=len(pairs),
        mean_current=fmean(before.reward for before, _ in pairs),
        mean_candidate=fmean(after.reward for _, after in pairs),
        mean_diff=fmean(after.reward - before.reward for before, after in pairs),
        ci_low=ci_low,
        ci_high=ci_high,
    )


def bootstrap_interval(clusters: Sequence[Sequence[float]], settings: GateSettings) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean difference, resampling whole clusters (a
    task's paired differences) with replacement. One cluster per pair is the pair-level bootstrap."""
    sums, sizes = [sum(cluster) for cluster in clusters], [len(cluster) for cluster in clusters]
    rng = random.Random(settings.rng_seed)
    indices = range(len(clusters))
    means = []
    for _ in range(settings.resamples):
        drawn = rng.choices(indices, k=len(clusters))
        means.append(sum(sums[i] for i in drawn) / sum(sizes[i] for i in drawn))
    means.sort()
    tail = (1 - settings.confidence) / 2
    low = means[math.floor(tail * (settings.resamples - 1))]
    high = means[math.ceil((1 - tail) * (settings.resamples - 1))]
    return low, high


def success_by_kind(
    results: Iterable[HeldoutResult], kind_of: Callable[[str], str]
) -> dict[str, tuple[float, int]]:
    """Mean reward over all attempts and number of distinct tasks, per kind of task
    (`kind_of(task)`), sorted by kind: one executor's measured competence on each kind."""
    rewards: dict[str, list[float]] = defaultdict(list)
    tasks: dict[str, set[str]] = defaultdict(set)
    for result in results:
        kind = kind_of(result.task)
        rewards[kind].append(result.reward)
        tasks[kind].add(result.task)
    return {kind: (fmean(rewards[kind]), len(tasks[kind])) for kind in sorted(rewards)}


def _paired(current: Iterable[HeldoutResult], candidate: Iterable[HeldoutResult], name: str) -> list[Pair]:
    before, after = _by_pair(current, "current", name), _by_pair(candidate, "candidate", name)
    if before.keys() != after.keys():
        differ = before.keys() ^ after.keys()
        raise GateError(
            f"the current and candidate {name} results must cover the same (task, seed) pairs; "
            f"{len(differ)} differ, e.g. {sorted(differ)[:3]}"
        )
    if not before:
        raise GateError(f"no {name} results to compare")
    return [(before[key], after[key]) for key in sorted(before)]


def _by_pair(results: Iterable[HeldoutResult], side: str, name: str) -> dict[tuple[str, int], HeldoutResult]:
    paired: dict[tuple[str, int], HeldoutResult] = {}
    for result in results:
        key = (result.task, result.seed)
        if key in paired:
            raise GateError(f"the {side} {name} results hold task {result.task!r} seed {result.seed} twice")
        paired[key] = result
    return paired


def _enough(figures: SetComparison, settings: GateSettings) -> bool:
    return figures.tasks >= settings.min_tasks


def _improves(figures: SetComparison, settings: GateSettings) -> bool:
    return _enough(figures, settings) and figures.ci_low > 0


def _count(figures: SetComparison) -> str:
    return f"{figures.tasks} task{'s' * (figures.tasks != 1)}, {figures.pairs} pairs"


def _interval(figures: SetComparison, settings: GateSettings) -> str:
    return (
        f"mean improvement {figures.mean_diff:+.3f}, {settings.confidence:.0%} interval "
        f"[{figures.ci_low:+.3f}, {figures.ci_high:+.3f}]"
    )


def _not_worse(name: str, figures: SetComparison, settings: GateSettings) -> tuple[bool, str]:
    margin = settings.non_inferiority_margin
    passed = figures.ci_low > -margin
    verdict = "not worse" if passed else "worse"
    above = "above" if passed else "not above"
    return passed, (
        f"{name} {verdict}: {_count(figures)}, {_interval(figures, settings)}: "
        f"lower bound {above} -{margin:.3f}"
    )


def _one_improves(named: list[tuple[str, SetComparison]], settings: GateSettings) -> tuple[bool, str]:
    improving = [name for name, figures in named if _improves(figures, settings)]
    if improving:
        return (
            True,
            f"{' and '.join(improving)} better: lower bound above 0 with at least {settings.min_tasks} tasks",
        )
    why = "; ".join(
        f"{name} {figures.tasks} tasks (at least {settings.min_tasks} needed), lower bound {figures.ci_low:+.3f}"
        for name, figures in named
    )
    return False, f"neither set better: {why}"


def _no_rise(kind: str, totals: tuple[int, int], allowed: int) -> tuple[bool, str]:
    before, after = totals
    passed = after <= before + allowed
    slack = f" + {allowed} allowed" if allowed else ""
    verb = "no rise" if passed else "rose"
    return passed, f"{kind} {verb}: {before} -> {after}{slack}"
