"""The promotion gate: is the candidate executor better than the current one on held-out tasks?

    decision = decide(current_results, candidate_results)   # one HeldoutResult per (task, seed)
    if decision.promote: ...

Both executors ran the same frozen held-out tasks with the same seeds, so results pair up by
(task, seed) and the question is about the paired differences `candidate - current`. The gate
promotes only when all of these hold, and says which failed in `reasons`:

1. at least `min_pairs` pairs (a handful of lucky pairs is no evidence; with three pairs that
   all improve, every bootstrap resample agrees and the interval collapses to a point);
2. the percentile bootstrap's lower bound on the mean difference is above zero: the pairs are
   resampled with replacement `resamples` times from `random.Random(rng_seed)`, and the bound
   is the `(1 - confidence) / 2` quantile of the resampled means (2.5% for 95%);
3. parse failures do not rise, and neither do timeouts: for each kind, the candidate's total over
   the pairs exceeds the current's total by at most `floor(failure_tolerance * pairs)`. The default
   tolerance 0 means any increase at all blocks the promotion.

Pure Python and deterministic: the same results give the same decision, bit for bit.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
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


@dataclass(frozen=True)
class GateSettings:
    resamples: int = 2000
    confidence: float = 0.95
    rng_seed: int = 0
    min_pairs: int = 10
    failure_tolerance: float = 0.0  # extra parse failures (or timeouts) allowed, per pair

    def __post_init__(self) -> None:
        if self.resamples < 100:
            raise ValueError(f"resamples must be at least 100, got {self.resamples}")
        if not 0.5 < self.confidence < 1:
            raise ValueError(f"confidence must be in (0.5, 1), got {self.confidence}")
        if self.min_pairs < 2:
            raise ValueError(f"min_pairs must be at least 2, got {self.min_pairs}")
        if self.failure_tolerance < 0:
            raise ValueError(f"failure_tolerance must be >= 0, got {self.failure_tolerance}")


@dataclass(frozen=True)
class GateDecision:
    promote: bool
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

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON types, for meta.json and reports."""
        data = asdict(self)
        data["parse_failures"], data["timeouts"] = list(self.parse_failures), list(self.timeouts)
        return data


def decide(
    current: Iterable[HeldoutResult],
    candidate: Iterable[HeldoutResult],
    settings: GateSettings = GateSettings(),
) -> GateDecision:
    """Compare the two executors' results pair by pair; see the module docstring for the rule.
    Raises GateError unless both cover exactly the same (task, seed) pairs, each once."""
    before, after = _by_pair(current, "current"), _by_pair(candidate, "candidate")
    if before.keys() != after.keys():
        missing = sorted(before.keys() ^ after.keys())[:3]
        raise GateError(
            "the current and candidate results must cover the same (task, seed) pairs; "
            f"{len(before.keys() ^ after.keys())} differ, e.g. {missing}"
        )
    keys = sorted(before)
    if not keys:
        raise GateError("no held-out results to compare")
    diffs = [after[key].reward - before[key].reward for key in keys]
    ci_low, ci_high = bootstrap_interval(diffs, settings)
    failures = (_total(before, "parse_failures"), _total(after, "parse_failures"))
    timeouts = (_total(before, "timeouts"), _total(after, "timeouts"))
    allowed = math.floor(settings.failure_tolerance * len(keys))

    above = "above" if ci_low > 0 else "not above"
    checks = [
        (len(keys) >= settings.min_pairs, f"{len(keys)} pairs (at least {settings.min_pairs} needed)"),
        (
            ci_low > 0,
            f"mean improvement {fmean(diffs):+.3f}, {settings.confidence:.0%} interval "
            f"[{ci_low:+.3f}, {ci_high:+.3f}]: lower bound {above} 0",
        ),
        _no_rise("parse failures", failures, allowed),
        _no_rise("timeouts", timeouts, allowed),
    ]
    reasons = [("ok: " if passed else "refused: ") + line for passed, line in checks]
    return GateDecision(
        promote=all(passed for passed, _ in checks),
        pairs=len(keys),
        mean_current=fmean(before[k].reward for k in keys),
        mean_candidate=fmean(after[k].reward for k in keys),
        mean_diff=fmean(diffs),
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=settings.confidence,
        parse_failures=failures,
        timeouts=timeouts,
        reasons=reasons,
    )


def bootstrap_interval(diffs: list[float], settings: GateSettings) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of `diffs`, resampled as pairs."""
    rng = random.Random(settings.rng_seed)
    n = len(diffs)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(settings.resamples))
    tail = (1 - settings.confidence) / 2
    low = means[math.floor(tail * (settings.resamples - 1))]
    high = means[math.ceil((1 - tail) * (settings.resamples - 1))]
    return low, high


def _by_pair(results: Iterable[HeldoutResult], side: str) -> dict[tuple[str, int], HeldoutResult]:
    paired: dict[tuple[str, int], HeldoutResult] = {}
    for result in results:
        key = (result.task, result.seed)
        if key in paired:
            raise GateError(f"the {side} results hold task {result.task!r} seed {result.seed} twice")
        paired[key] = result
    return paired


def _total(results: dict[tuple[str, int], HeldoutResult], kind: str) -> int:
    return sum(getattr(result, kind) for result in results.values())


def _no_rise(kind: str, totals: tuple[int, int], allowed: int) -> tuple[bool, str]:
    before, after = totals
    passed = after <= before + allowed
    slack = f" + {allowed} allowed" if allowed else ""
    verb = "no rise" if passed else "rose"
    return passed, f"{kind} {verb}: {before} -> {after}{slack}"
