"""Which training tasks an iteration replays (learner/task_sampling.py)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from learner.task_sampling import TaskSampler
from learner.tasks import Task


def tasks(count: int, families: int | None = None) -> list[Task]:
    """t0, t1, ...: each of its own family unless `families` is given (then round robin)."""
    return [Task(f"t{i}", f"f{i % (families or count)}", f"task {i}", {}, "true") for i in range(count)]


def test_uniform_draws_like_random_sample() -> None:
    pool = tasks(10)
    sampler = TaskSampler(pool, "uniform", random.Random(7))
    expected = random.Random(7).sample(pool, 4)
    assert sampler.draw(4) == expected


def test_weights_are_the_variance_of_a_smoothed_success_rate() -> None:
    sampler = TaskSampler(tasks(3), "learnability", random.Random(0))
    assert sampler.weight("t0") == pytest.approx(0.25)  # never replayed: the largest weight
    sampler.record([("t0", 1.0)] * 8 + [("t1", 1.0)] * 4 + [("t1", 0.0)] * 4 + [("t2", 0.0)] * 8)
    # t0's family: (8 + 1) / (8 + 2) = 0.9; t0 itself: (8 + 2 * 0.9) / (8 + 2) = 0.98
    assert sampler.success_rate("t0") == pytest.approx(0.98)
    assert sampler.weight("t0") == pytest.approx(0.98 * 0.02)
    assert sampler.weight("t1") == pytest.approx(0.25)
    assert sampler.success_rate("t2") == pytest.approx(0.02)


def test_a_task_not_yet_replayed_is_weighed_by_its_family() -> None:
    sampler = TaskSampler(tasks(4, families=2), "learnability", random.Random(0))  # t0, t2 in f0
    sampler.record([("t0", 1.0)] * 18)
    assert sampler.success_rate("t2") == pytest.approx(19 / 20)  # f0's rate, t2 never replayed
    assert sampler.weight("t1") == sampler.weight("t3") == pytest.approx(0.25)  # f1 untouched


def test_rewards_outside_zero_one_are_clamped_and_unknown_tasks_ignored() -> None:
    sampler = TaskSampler(tasks(1), "learnability", random.Random(0))
    sampler.record([("t0", 5.0), ("t0", -3.0), ("elsewhere", 1.0)])
    assert sampler.success_rate("t0") == pytest.approx(0.5)  # one success, one failure


def test_draws_are_distinct_and_capped_at_the_pool() -> None:
    sampler = TaskSampler(tasks(5), "learnability", random.Random(1))
    for _ in range(20):
        batch = sampler.draw(3)
        assert len({t.id for t in batch}) == 3
    assert sorted(t.id for t in sampler.draw(50)) == [f"t{i}" for i in range(5)]


def test_learnability_favours_tasks_whose_attempts_differ_but_visits_every_task() -> None:
    sampler = TaskSampler(tasks(4), "learnability", random.Random(3))
    # t0 and t1 always solved (weight 0.004 after 20 attempts); t2 and t3 half the time (0.25).
    sampler.record(
        [("t0", 1.0)] * 20
        + [("t1", 1.0)] * 20
        + [("t2", 1.0), ("t2", 0.0)] * 10
        + [("t3", 1.0), ("t3", 0.0)] * 10
    )
    drawn = Counter(t.id for _ in range(2000) for t in sampler.draw(1))
    assert drawn["t2"] + drawn["t3"] > 0.9 * 2000
    assert drawn["t0"] > 0 and drawn["t1"] > 0
    uniform = TaskSampler(tasks(4), "uniform", random.Random(3))
    uniform.record([("t0", 1.0)] * 100)
    assert Counter(t.id for _ in range(2000) for t in uniform.draw(1))["t0"] > 400  # weights unused


def test_an_unknown_way_of_sampling_is_refused() -> None:
    with pytest.raises(ValueError, match="'uniform' or 'learnability'"):
        TaskSampler(tasks(1), "greedy", random.Random(0))  # type: ignore[arg-type]


def test_source_weights_draw_the_days_episodes_first() -> None:
    pool = [
        Task(f"{source}{i}", f"f{i}", "task", {}, "true", source=f"{source}:{i}")
        for source in ("episode", "synthetic")
        for i in range(10)
    ]
    weights = {"episode": 4.0, "synthetic": 1.0}
    for how in ("uniform", "learnability"):
        sampler = TaskSampler(pool, how, random.Random(3), source_weights=weights)  # type: ignore[arg-type]
        assert sampler.weight("episode0") == pytest.approx(4 * sampler.weight("synthetic0"))
        drawn = Counter(task.source.split(":")[0] for _ in range(200) for task in sampler.draw(2))
        assert drawn["episode"] > 2.5 * drawn["synthetic"]  # 4:1 in weight, without replacement
    with pytest.raises(ValueError, match="positive"):
        TaskSampler(pool, "uniform", random.Random(0), source_weights={"episode": 0.0})
