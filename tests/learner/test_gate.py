"""learner.gate: task-level bootstrap promotion decisions on hand-made held-out results."""

from __future__ import annotations

import json
import random
import time

import pytest

from learner.gate import (
    GateDecision,
    GateError,
    GateSettings,
    HeldoutResult,
    bootstrap_interval,
    decide,
    success_by_kind,
)


def results(
    successes: list[int], *, parse_failures: list[int] | None = None, timeouts: list[int] | None = None
) -> list[HeldoutResult]:
    """One result per pair, pair i being task `t{i // 3}` with seed `i % 3`."""
    n = len(successes)
    failures, slow = parse_failures or [0] * n, timeouts or [0] * n
    return [HeldoutResult(f"t{i // 3}", i % 3, float(successes[i]), failures[i], slow[i]) for i in range(n)]


def attempts(per_task: list[list[int]], prefix: str = "t") -> list[HeldoutResult]:
    """`per_task[i]` holds task `{prefix}{i}`'s rewards, one per seed."""
    return [
        HeldoutResult(f"{prefix}{task}", seed, float(reward))
        for task, rewards in enumerate(per_task)
        for seed, reward in enumerate(rewards)
    ]


def refusals(decision: GateDecision) -> list[str]:
    return [reason for reason in decision.reasons if reason.startswith("refused")]


# 40 pairs: the current executor solves 12, the candidate 28 (it keeps 10 of the 12 and adds 18).
CURRENT = [1] * 12 + [0] * 28
BETTER = [1] * 10 + [0] * 2 + [1] * 18 + [0] * 10


def test_a_clear_improvement_is_promoted() -> None:
    decision = decide(results(CURRENT), results(BETTER))
    assert decision.promote, decision.reasons
    assert decision.pairs == 40 and decision.tasks == 14
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
    one_seed = [[0], [1], [0], [1], [0], [1]], [[1], [0], [1], [1], [1], [1]]
    decision = decide(attempts(one_seed[0]), attempts(one_seed[1]))  # +0.33 mean
    assert not decision.promote and decision.ci_low <= 0
    assert any("6 tasks, 6 pairs (at least 10 tasks needed)" in reason for reason in refusals(decision))


def test_a_tiny_sample_that_all_improves_is_still_too_small() -> None:
    decision = decide(results([0, 0, 0]), results([1, 1, 1]))
    assert decision.ci_low == decision.ci_high == 1.0  # every resample agrees
    assert not decision.promote
    assert refusals(decision) == ["refused: 1 task, 3 pairs (at least 10 tasks needed)"]


def test_ties_are_not_an_improvement() -> None:
    decision = decide(results(CURRENT), results(CURRENT))
    assert not decision.promote and decision.ci_low == decision.ci_high == 0.0


def test_rewards_other_than_success_pair_up_too() -> None:
    before = [HeldoutResult(f"t{i}", 0, 0.2 + 0.01 * i) for i in range(20)]
    after = [HeldoutResult(f"t{i}", 0, 0.25 + 0.01 * i) for i in range(20)]
    decision = decide(before, after)
    assert decision.promote and decision.ci_low == pytest.approx(0.05)


def test_the_decision_is_deterministic_and_fast() -> None:
    draw = random.Random(7)
    many_before = results([int(draw.random() < 0.4) for _ in range(300)])
    many_after = results([int(draw.random() < 0.6) for _ in range(300)])
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
    data = decide(results(CURRENT), results(BETTER)).as_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["promote"] is True and data["parse_failures"] == [0, 0]
    assert data["tasks"] == 14 and data["regression"] is None


def test_many_identical_attempts_of_few_tasks_are_not_many_pairs_of_evidence() -> None:
    # 12 tasks x 8 attempts, each task deterministic: 8 tasks flip to solved, 4 flip to failed.
    before = attempts([[0] * 8] * 8 + [[1] * 8] * 4)
    after = attempts([[1] * 8] * 8 + [[0] * 8] * 4)
    settings = GateSettings()
    by_task = [[1.0] * 8] * 8 + [[-1.0] * 8] * 4
    pair_low, _ = bootstrap_interval([[d] for diffs in by_task for d in diffs], settings)
    task_low, task_high = bootstrap_interval(by_task, settings)
    assert pair_low > 0.1  # 96 "independent" pairs: the old gate would have promoted
    assert task_low < 0  # 12 tasks: the same evidence is far from conclusive

    decision = decide(before, after, settings)
    assert (decision.tasks, decision.pairs) == (12, 96)
    assert decision.mean_diff == pytest.approx(1 / 3)
    assert (decision.ci_low, decision.ci_high) == (task_low, task_high)
    assert not decision.promote
    assert refusals(decision) == [
        f"refused: mean improvement +0.333, 95% interval [{task_low:+.3f}, {task_high:+.3f}]: "
        "lower bound not above 0"
    ]


def test_the_pair_level_bootstrap_is_one_cluster_per_pair() -> None:
    # 20 tasks of one pair each: resampling tasks is resampling pairs.
    before = [HeldoutResult(f"t{i}", 0, float(i < 6)) for i in range(20)]
    after = [HeldoutResult(f"t{i}", 0, float(i < 14)) for i in range(20)]
    decision = decide(before, after)
    diffs = [b.reward - a.reward for a, b in zip(before, after, strict=True)]
    by_name = sorted(zip([r.task for r in before], diffs, strict=True))  # the gate orders tasks by name
    assert (decision.ci_low, decision.ci_high) == bootstrap_interval(
        [[d] for _, d in by_name], GateSettings()
    )


def test_min_tasks_counts_distinct_tasks_not_attempts() -> None:
    nine_tasks = decide(attempts([[0] * 5] * 9), attempts([[1] * 5] * 9))  # 45 pairs, all improve
    assert not nine_tasks.promote and nine_tasks.ci_low == 1.0
    assert refusals(nine_tasks) == ["refused: 9 tasks, 45 pairs (at least 10 tasks needed)"]
    ten_tasks = decide(attempts([[0]] * 10), attempts([[1]] * 10))  # 10 pairs, one per task
    assert ten_tasks.promote and (ten_tasks.tasks, ten_tasks.pairs) == (10, 10)
    assert decide(attempts([[0] * 5] * 9), attempts([[1] * 5] * 9), GateSettings(min_tasks=9)).promote


# Two sets. The user's held-out tasks: 20 tasks x 2 seeds, the candidate solves 14 more of them.
USER_BEFORE = attempts([[0, 0]] * 14 + [[1, 1]] * 6, "user")
USER_BETTER = attempts([[1, 1]] * 20, "user")
# The regression set: 100 tasks x 1 seed, the current executor solves 90.
REGRESSION_BEFORE = attempts([[1]] * 90 + [[0]] * 10, "reg")


def regression_after(lost: int, gained: int = 0) -> list[HeldoutResult]:
    """The candidate on the regression set: `lost` of the 90 solved tasks lost, `gained` of the
    10 unsolved solved."""
    rewards = [[0]] * lost + [[1]] * (90 - lost) + [[1]] * gained + [[0]] * (10 - gained)
    return attempts(rewards, "reg")


def test_improving_on_the_user_set_does_not_excuse_forgetting_the_regression_set() -> None:
    decision = decide(USER_BEFORE, USER_BETTER, regression=(REGRESSION_BEFORE, regression_after(lost=8)))
    assert decision.ci_low > 0.4  # the user set alone would promote
    assert decision.regression is not None and decision.regression.mean_diff == pytest.approx(-0.08)
    assert not decision.promote
    low, high = decision.regression.ci_low, decision.regression.ci_high
    assert refusals(decision) == [
        f"refused: regression worse: 100 tasks, 100 pairs, mean improvement -0.080, 95% interval "
        f"[{low:+.3f}, {high:+.3f}]: lower bound not above -0.050"
    ]
    assert "ok: held-out better: lower bound above 0 with at least 10 tasks" in decision.reasons


def test_a_small_loss_within_the_margin_does_not_block_an_improvement() -> None:
    settings = GateSettings()
    decision = decide(USER_BEFORE, USER_BETTER, settings, (REGRESSION_BEFORE, regression_after(lost=1)))
    assert decision.promote, decision.reasons
    assert decision.regression is not None and -0.05 < decision.regression.ci_low < 0
    assert decision.non_inferiority_margin == 0.05
    assert decision.reasons[1].startswith("ok: regression not worse: 100 tasks, 100 pairs")
    assert decision.reasons[2] == "ok: held-out better: lower bound above 0 with at least 10 tasks"
    strict = GateSettings(non_inferiority_margin=0.0)  # then "not worse" means better
    refused = decide(USER_BEFORE, USER_BETTER, strict, (REGRESSION_BEFORE, regression_after(lost=1)))
    assert not refused.promote and refusals(refused)[0].startswith("refused: regression worse")


def test_an_executor_near_the_ceiling_on_one_set_is_promoted_for_improving_on_the_other() -> None:
    solved = attempts([[1, 1]] * 20, "user")  # both solve every user task: no room to improve
    decision = decide(solved, solved, regression=(REGRESSION_BEFORE, regression_after(lost=0, gained=9)))
    assert decision.promote, decision.reasons
    assert decision.mean_diff == 0 and decision.ci_low == 0.0  # the flat figures: the held-out set
    assert decision.regression is not None and decision.regression.ci_low > 0
    assert refusals(decision) == []
    assert decision.reasons[:3] == [
        "ok: held-out not worse: 20 tasks, 40 pairs, mean improvement +0.000, 95% interval "
        "[+0.000, +0.000]: lower bound above -0.050",
        f"ok: regression not worse: 100 tasks, 100 pairs, mean improvement +0.090, 95% interval "
        f"[{decision.regression.ci_low:+.3f}, {decision.regression.ci_high:+.3f}]: lower bound above -0.050",
        "ok: regression better: lower bound above 0 with at least 10 tasks",
    ]


def test_with_two_sets_the_improvement_needs_min_tasks_on_the_set_that_carries_it() -> None:
    few = decide(
        attempts([[0] * 4] * 5, "user"), attempts([[1] * 4] * 5, "user"),  # 5 tasks, all improve
        regression=(REGRESSION_BEFORE, regression_after(lost=0)),
    )  # fmt: skip
    assert few.ci_low == 1.0 and not few.promote
    assert refusals(few) == [
        "refused: neither set better: held-out 5 tasks (at least 10 needed), lower bound +1.000; "
        "regression 100 tasks (at least 10 needed), lower bound +0.000"
    ]
    # A small regression set needs no minimum to show it is not worse.
    small = attempts([[1]] * 3, "reg")
    assert decide(USER_BEFORE, USER_BETTER, regression=(small, small)).promote


def test_failures_and_timeouts_count_over_both_sets() -> None:
    noisy = [HeldoutResult(r.task, r.seed, r.reward, parse_failures=1) for r in regression_after(lost=0)]
    decision = decide(USER_BEFORE, USER_BETTER, regression=(REGRESSION_BEFORE, noisy))
    assert not decision.promote and decision.parse_failures == (0, 100)
    assert refusals(decision) == ["refused: parse failures rose: 0 -> 100"]
    loose = GateSettings(failure_tolerance=100 / 140)  # 140 pairs in all
    assert decide(USER_BEFORE, USER_BETTER, loose, (REGRESSION_BEFORE, noisy)).promote


def test_two_set_decisions_are_deterministic() -> None:
    regression = (REGRESSION_BEFORE, regression_after(lost=2, gained=3))
    first = decide(USER_BEFORE, USER_BETTER, regression=regression)
    again = decide(list(reversed(USER_BEFORE)), USER_BETTER, regression=(regression[0][::-1], regression[1]))
    assert again == first and again.as_dict() == first.as_dict()


def test_two_set_decisions_are_plain_json_with_both_sets_figures() -> None:
    data = decide(
        USER_BEFORE, USER_BETTER, regression=(REGRESSION_BEFORE, regression_after(lost=1))
    ).as_dict()
    assert json.loads(json.dumps(data)) == data
    assert (data["tasks"], data["pairs"], data["mean_diff"]) == (20, 40, pytest.approx(0.7))
    regression = data["regression"]
    assert (regression["tasks"], regression["pairs"]) == (100, 100)
    assert regression["mean_current"] == pytest.approx(0.9) and regression["mean_diff"] == pytest.approx(
        -0.01
    )
    assert data["non_inferiority_margin"] == 0.05


def test_the_regression_results_must_pair_up_too() -> None:
    with pytest.raises(GateError, match="candidate regression results must cover the same"):
        decide(USER_BEFORE, USER_BETTER, regression=(REGRESSION_BEFORE, regression_after(lost=0)[:-1]))
    with pytest.raises(GateError, match="no regression results"):
        decide(USER_BEFORE, USER_BETTER, regression=([], []))


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="min_tasks must be at least 2"):
        GateSettings(min_tasks=1)
    with pytest.raises(ValueError, match="non_inferiority_margin"):
        GateSettings(non_inferiority_margin=-0.01)


def test_success_by_kind_gives_mean_reward_and_task_count() -> None:
    results = [
        HeldoutResult("grep-1", 0, 1.0), HeldoutResult("grep-1", 1, 0.0),
        HeldoutResult("grep-2", 0, 1.0), HeldoutResult("grep-2", 1, 1.0),
        HeldoutResult("sed-1", 0, 0.5),
    ]  # fmt: skip
    by_kind = success_by_kind(results, lambda task: task.split("-")[0])
    assert by_kind == {"grep": (0.75, 2), "sed": (0.5, 1)}
    assert list(by_kind) == ["grep", "sed"] and success_by_kind([], str) == {}
