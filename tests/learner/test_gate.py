"""learner.gate: paired bootstrap promotion decisions on hand-made held-out results."""

from __future__ import annotations

import time

import pytest

from learner.gate import GateDecision, GateError, GateSettings, HeldoutResult, decide


def results(
    successes: list[int], *, parse_failures: list[int] | None = None, timeouts: list[int] | None = None
) -> list[HeldoutResult]:
    """One result per pair, pair i being task `t{i // 3}` with seed `i % 3`."""
    n = len(successes)
    failures, slow = parse_failures or [0] * n, timeouts or [0] * n
    return [HeldoutResult(f"t{i // 3}", i % 3, float(successes[i]), failures[i], slow[i]) for i in range(n)]


def refusals(decision: GateDecision) -> list[str]:
    return [reason for reason in decision.reasons if reason.startswith("refused")]


# 40 pairs: the current executor solves 12, the candidate 28 (it keeps 10 of the 12 and adds 18).
CURRENT = [1] * 12 + [0] * 28
BETTER = [1] * 10 + [0] * 2 + [1] * 18 + [0] * 10


def test_a_clear_improvement_is_promoted() -> None:
    decision = decide(results(CURRENT), results(BETTER))
    assert decision.promote, decision.reasons
    assert decision.pairs == 40
    assert decision.mean_current == pytest.approx(0.3) and decision.mean_candidate == pytest.approx(0.7)
    assert decision.mean_diff == pytest.approx(0.4)
    assert 0 < decision.ci_low < 0.4 < decision.ci_high < 1
    assert refusals(decision) == []


def test_a_clear_regression_is_refused() -> None:
    decision = decide(results(BETTER), results(CURRENT))
    assert not decision.promote
    assert decision.mean_diff == pytest.approx(-0.4) and decision.ci_high < 0
    assert len(refusals(decision)) == 1 and "lower bound not above 0" in refusals(decision)[0]


def test_an_improvement_with_more_parse_failures_is_refused() -> None:
    before = results(CURRENT, parse_failures=[1] * 3 + [0] * 37)
    after = results(BETTER, parse_failures=[1] * 4 + [0] * 36)
    decision = decide(before, after)
    assert not decision.promote and decision.ci_low > 0
    assert decision.parse_failures == (3, 4)
    assert refusals(decision) == ["refused: parse failures rose: 3 -> 4"]


def test_an_improvement_with_more_timeouts_is_refused() -> None:
    decision = decide(results(CURRENT), results(BETTER, timeouts=[0] * 39 + [1]))
    assert not decision.promote and decision.timeouts == (0, 1)
    assert refusals(decision) == ["refused: timeouts rose: 0 -> 1"]


def test_fewer_failures_and_timeouts_do_not_block() -> None:
    decision = decide(
        results(CURRENT, parse_failures=[2] * 40, timeouts=[1] * 40),
        results(BETTER, parse_failures=[1] * 40, timeouts=[1] * 40),
    )
    assert decision.promote and decision.parse_failures == (80, 40) and decision.timeouts == (40, 40)


def test_the_failure_tolerance_allows_a_documented_rise() -> None:
    after = results(BETTER, parse_failures=[1] * 4 + [0] * 36)  # 4 more than the current's 0
    loose = GateSettings(failure_tolerance=0.1)  # floor(0.1 * 40) = 4 more allowed
    assert decide(results(CURRENT), after, loose).promote
    tighter = GateSettings(failure_tolerance=0.09)  # floor(3.6) = 3
    assert refusals(decide(results(CURRENT), after, tighter)) == [
        "refused: parse failures rose: 0 -> 4 + 3 allowed"
    ]


def test_a_tiny_noisy_sample_is_refused() -> None:
    decision = decide(results([0, 1, 0, 1, 0, 1]), results([1, 0, 1, 1, 1, 1]))  # +0.33 mean
    assert not decision.promote and decision.ci_low <= 0
    assert any("6 pairs (at least 10 needed)" in reason for reason in refusals(decision))


def test_a_tiny_sample_that_all_improves_is_still_too_small() -> None:
    decision = decide(results([0, 0, 0]), results([1, 1, 1]))
    assert decision.ci_low == decision.ci_high == 1.0  # every resample agrees
    assert not decision.promote
    assert refusals(decision) == ["refused: 3 pairs (at least 10 needed)"]


def test_ties_are_not_an_improvement() -> None:
    decision = decide(results(CURRENT), results(CURRENT))
    assert not decision.promote and decision.ci_low == decision.ci_high == 0.0


def test_rewards_other_than_success_pair_up_too() -> None:
    before = [HeldoutResult(f"t{i}", 0, 0.2 + 0.01 * i) for i in range(20)]
    after = [HeldoutResult(f"t{i}", 0, 0.25 + 0.01 * i) for i in range(20)]
    decision = decide(before, after)
    assert decision.promote and decision.ci_low == pytest.approx(0.05)


def test_the_decision_is_deterministic_and_fast() -> None:
    many_before = results([i % 2 for i in range(300)])
    many_after = results([(i % 3 > 0) * 1 for i in range(300)])
    started = time.perf_counter()
    first = decide(many_before, many_after)
    assert time.perf_counter() - started < 2.0
    assert decide(list(reversed(many_before)), many_after) == first  # order does not matter
    other_seed = decide(many_before, many_after, GateSettings(rng_seed=1))
    assert other_seed.mean_diff == first.mean_diff
    assert (other_seed.ci_low, other_seed.ci_high) != (first.ci_low, first.ci_high)


def test_results_must_cover_the_same_pairs() -> None:
    with pytest.raises(GateError, match="same \\(task, seed\\) pairs"):
        decide(results(CURRENT), results(BETTER)[:-1])
    twice = results(CURRENT) + results(CURRENT)[:1]
    with pytest.raises(GateError, match="task 't0' seed 0 twice"):
        decide(twice, results(BETTER))
    with pytest.raises(GateError, match="no held-out results"):
        decide([], [])


def test_as_dict_is_plain_json() -> None:
    import json

    data = decide(results(CURRENT), results(BETTER)).as_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["promote"] is True and data["parse_failures"] == [0, 0]
