"""learner/rows.py, advantages.py and micro_batch.py on hand-built trajectories with hand-checked ids."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
import torch

from learner.advantages import group_advantages, select_groups
from learner.micro_batch import collate
from learner.rows import Row, RowSettings, build_rows, pack_rows, packed_tokens, shared_prefix
from memory.trajectory_records import ExecutorEpisode, RecordedCall, Trajectory

torch.set_num_threads(1)

_ids = iter(range(1, 1_000_000))


def make_call(
    prompt: list[int],
    completion: list[int],
    logprobs: list[float] | None = None,
    *,
    extends: bool = False,
    mismatch: str | None = None,
    finish_reason: str = "stop",
    retokenized: bool = False,
    role: str = "executor",
    sampling: dict | None = None,
) -> RecordedCall:
    return RecordedCall(
        role=role,
        model="tiny",
        prompt_ids=prompt,
        completion_ids=completion,
        completion_logprobs=[-0.5] * len(completion) if logprobs is None else logprobs,
        finish_reason=finish_reason,
        retokenized=retokenized,
        sampling=sampling or {"temperature": 1.0, "top_p": 1.0},
        id=next(_ids),
        episode_id=0,
        index=0,
        extends_previous=extends,
        mismatch=mismatch,
        common_prefix=0,
        created_at=0.0,
    )


def make_episode(
    calls: list[RecordedCall],
    reward: float | None = 1.0,
    group: str | None = "g",
    split: str | None = "train",
    parse_failures: int | None = None,
) -> Trajectory:
    episode = ExecutorEpisode(
        id=next(_ids), kind="executor", task="t", status="done", reward=reward,
        reward_source="verifier", reward_reason=None, split=split, group_id=group,
        sandbox_backend="local", snapshot_id=None, snapshot_bytes=None, verifier=None,
        parent_episode_id=None, session_id=None, user_id=None, contains_secret=False,
        created_at=0.0, finished_at=None, parse_failures=parse_failures,
    )  # fmt: skip
    return Trajectory(episode, calls)


def one_call(completion_length: int, reward: float, group: str = "g") -> Trajectory:
    return make_episode([make_call([1, 2, 3], list(range(10, 10 + completion_length)))], reward, group)


def test_a_two_call_episode_whose_prompt_extends_is_one_row_masked_to_the_sampled_tokens() -> None:
    first = make_call([1, 2, 3], [4, 5], [-0.1, -0.2])
    second = make_call([1, 2, 3, 4, 5, 6, 7], [8, 9], [-0.3, -0.4], extends=True)  # 6, 7: tool output
    batch = build_rows([make_episode([first, second], 1.0), one_call(2, 0.0)], RowSettings())

    row = next(r for r in batch.rows if r.episode_id == batch.rows[0].episode_id)
    assert row.tokens == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert row.mask == [0, 0, 0, 1, 1, 0, 0, 1, 1]
    assert row.old_logprobs == [0, 0, 0, -0.1, -0.2, 0, 0, -0.3, -0.4]
    assert len([r for r in batch.rows if r.episode_id == row.episode_id]) == 1
    assert batch.stats.mismatches == {}


def test_a_prompt_that_does_not_extend_starts_a_new_row_and_counts_its_cause() -> None:
    first = make_call([1, 2, 3], [4, 5])
    second = make_call([1, 2, 3, 40, 6, 7], [8, 9], mismatch="completion_diverged")  # 4, 5 re-encoded
    third = make_call([1, 2, 3, 40, 6, 7, 8, 9, 11], [12], extends=True)
    batch = build_rows([make_episode([first, second, third], 1.0), one_call(2, 0.0)], RowSettings())

    rows = [r for r in batch.rows if r.reward == 1.0]
    assert sorted(r.tokens for r in rows) == [[1, 2, 3, 4, 5], [1, 2, 3, 40, 6, 7, 8, 9, 11, 12]]
    assert sorted(r.mask for r in rows) == [[0, 0, 0, 0, 0, 0, 1, 1, 0, 1], [0, 0, 0, 1, 1]]
    assert batch.stats.mismatches == {"completion_diverged": 1}


def test_advantages_and_weights_on_a_hand_checked_group() -> None:
    lengths, rewards = [2, 4, 5, 10], [1.0, 0.0, 0.0, 1.0]
    batch = build_rows([one_call(n, r) for n, r in zip(lengths, rewards)], RowSettings())

    assert [r.advantage for r in batch.rows] == [0.5, -0.5, -0.5, 0.5]
    assert [r.weight for r in batch.rows] == [1 / 2, 1 / 4, 1 / 5, 1 / 10]
    assert batch.denominator == 4  # episodes: each sums to 1, the batch to the mean episode loss
    assert batch.stats.reward_mean == 0.5

    scaled = build_rows([one_call(n, r) for n, r in zip(lengths, rewards)], RowSettings(scale_by_std=True))
    assert [r.advantage for r in scaled.rows] == pytest.approx([1, -1, -1, 1], abs=1e-5)


def test_a_reply_that_was_not_an_action_scores_below_a_wrong_command() -> None:
    def group(penalty: float):
        trajectories = [
            make_episode([make_call([1, 2], [3, 4])], 1.0),
            make_episode([make_call([1, 2], [3, 5])], 0.0),
            make_episode([make_call([1, 2], [3, 6])], 0.0, parse_failures=1),  # garbled JSON
            make_episode([make_call([1, 2], [3, 7])], 1.0, parse_failures=2),  # recovered twice
        ]
        return build_rows(trajectories, RowSettings(parse_failure_penalty=penalty))

    batch = group(0.5)  # scores 1, 0, -0.5, 0: mean 0.125
    assert [r.advantage for r in batch.rows] == [0.875, -0.125, -0.625, -0.125]
    assert [r.reward for r in batch.rows] == [1.0, 0.0, 0.0, 1.0]  # the reward itself is kept
    assert batch.stats.reward_mean == 0.5 and batch.stats.penalised_episodes == 2
    assert [r.advantage for r in group(0.0).rows] == [0.5, -0.5, -0.5, 0.5]


def test_parse_failures_alone_give_an_all_wrong_group_something_to_learn() -> None:
    wrong = [one_call(3, 0.0) for _ in range(3)]
    garbled = make_episode([make_call([1, 2, 3], [9, 9, 9])], 0.0, parse_failures=1)
    assert build_rows([*wrong, garbled], RowSettings(parse_failure_penalty=0.0)).rows == []
    batch = build_rows([*wrong, garbled], RowSettings())  # the default penalty
    assert len(batch.rows) == 4 and batch.rows[-1].advantage < 0 < batch.rows[0].advantage
    with pytest.raises(ValueError, match="parse_failure_penalty"):
        RowSettings(parse_failure_penalty=-1.0)


def test_token_and_constant_normalisations() -> None:
    trajectories = [one_call(n, r) for n, r in zip([2, 4], [1.0, 0.0])]
    token = build_rows(trajectories, RowSettings(normalisation="token"))
    assert [r.weight for r in token.rows] == [1, 1] and token.denominator == 6
    constant = build_rows(trajectories, RowSettings(normalisation="constant", constant_length=64))
    assert [r.weight for r in constant.rows] == [1 / 64, 1 / 64] and constant.denominator == 2


def test_an_episode_of_several_rows_sums_to_one() -> None:
    first = make_call([1, 2, 3], [4, 5, 6])
    second = make_call([7, 8], [9], mismatch="prompt_diverged")
    batch = build_rows([make_episode([first, second], 1.0), one_call(1, 0.0)], RowSettings())
    rows = [r for r in batch.rows if r.reward == 1.0]
    assert len(rows) == 2 and {r.advantage for r in rows} == {0.5}
    assert sum(r.weight * sum(r.mask) for r in rows) == pytest.approx(1.0)


def test_zero_variance_groups_are_dropped_and_their_fraction_reported() -> None:
    trajectories = [
        *(one_call(3, r, "varied") for r in [1.0, 0.0]),
        *(one_call(3, 1.0, "all-right") for _ in range(4)),
        *(one_call(3, 0.0, "all-wrong") for _ in range(4)),
    ]
    batch = build_rows(trajectories, RowSettings())
    assert {r.group_id for r in batch.rows} == {"varied"}
    assert batch.stats.groups == 3 and batch.stats.zero_variance_groups == 2
    assert batch.stats.zero_variance_fraction == pytest.approx(2 / 3)
    assert batch.stats.reward_mean == pytest.approx(5 / 10)


def test_top_variance_fraction_keeps_the_most_varied_groups() -> None:
    groups = {"a": [1.0, 0.0], "b": [1.0, 0.9], "c": [0.0, 0.0], "d": [0.5, 0.0]}
    selection = select_groups(groups, top_fraction=0.5)
    assert selection.kept == ["a", "d"]
    assert (selection.zero_variance, selection.low_variance) == (1, 1)
    assert group_advantages([1.0, 0.0, 0.0, 1.0]) == [0.5, -0.5, -0.5, 0.5]


def test_heldout_unrewarded_and_ungrouped_episodes_are_not_trained_on() -> None:
    trajectories = [
        one_call(2, 1.0),
        one_call(2, 0.0),
        make_episode([make_call([1], [2])], 1.0, split="heldout"),
        make_episode([make_call([1], [2])], None),
        make_episode([make_call([1], [2])], 1.0, group=None),
    ]
    batch = build_rows(trajectories, RowSettings())
    stats = batch.stats
    assert (stats.episodes, stats.trained_episodes, stats.rows) == (5, 2, 2)
    assert (stats.heldout_episodes, stats.unrewarded_episodes, stats.ungrouped_episodes) == (1, 1, 1)


def test_episodes_that_held_a_secret_are_refused_and_counted_with_those_held_back() -> None:
    clean = [one_call(2, 1.0), one_call(2, 0.0)]
    held = one_call(2, 1.0)
    leaky = Trajectory(replace(held.episode, contains_secret=True), held.calls)
    batch = build_rows([*clean, leaky], RowSettings(), secret_withheld=2)  # 2 more the store held back
    assert {row.episode_id for row in batch.rows} == {t.episode.id for t in clean}
    assert (batch.stats.trained_episodes, batch.stats.secret_episodes) == (2, 3)


def test_truncated_unsampled_and_planner_calls_are_context_only() -> None:
    truncated = make_call([1, 2], [3, 4], finish_reason="length")
    retokenized = make_call([1, 2, 3, 4, 5], [6], extends=True, retokenized=True)
    planner = make_call([50, 51], [52], role="planner")
    sampled = make_call(
        [1, 2, 3, 4, 5, 6, 7], [8], extends=True, sampling={"temperature": 0.7, "constrained": True}
    )
    batch = build_rows(
        [make_episode([truncated, retokenized, planner, sampled], 1.0), one_call(1, 0.0)], RowSettings()
    )

    row = max(batch.rows, key=lambda r: len(r.tokens))
    assert row.tokens == [1, 2, 3, 4, 5, 6, 7, 8]
    assert row.mask == [0, 0, 0, 0, 0, 0, 0, 1]
    assert row.weight == 1.0  # one trained token in the episode
    stats = batch.stats
    assert (stats.truncated_calls, stats.unsampled_calls, stats.tempered_calls, stats.constrained_calls) == (
        1,
        1,
        1,
        1,
    )
    assert stats.calls == 4  # executor calls of both episodes; the planner's is not one

    kept = build_rows([make_episode([truncated], 1.0), one_call(1, 0.0)], RowSettings(mask_truncated=False))
    assert max(kept.rows, key=lambda r: len(r.tokens)).mask == [0, 0, 1, 1]


def test_overlong_calls_are_dropped() -> None:
    long = make_call(list(range(1, 20)), [30, 31])  # 21 tokens
    after = make_call(list(range(1, 20)) + [30, 31, 32], [33], extends=True)  # 23
    short = make_call([1, 2], [3])
    settings = RowSettings(max_row_tokens=20, token_budget=64)
    batch = build_rows([make_episode([short, long], 1.0), make_episode([long, after, short], 0.0)], settings)
    assert batch.stats.overlong_calls == 3
    assert [r.tokens for r in batch.rows] == [[1, 2, 3], [1, 2, 3]]


def test_a_damaged_record_is_refused() -> None:
    broken = make_call([1], [2, 3], [-0.1])
    with pytest.raises(ValueError, match="1 logprobs for 2 completion ids"):
        build_rows([make_episode([broken], 1.0), one_call(1, 0.0)], RowSettings())


def test_settings_refuse_a_budget_smaller_than_a_row() -> None:
    with pytest.raises(ValueError, match="token_budget"):
        RowSettings(max_row_tokens=4096, token_budget=1024)
    with pytest.raises(ValueError, match="normalisation"):
        RowSettings(normalisation="sample")  # type: ignore[arg-type]


def test_packing_respects_the_token_budget_and_keeps_every_row() -> None:
    rng = random.Random(3)
    trajectories = [one_call(rng.randint(1, 120), float(i % 2), f"g{i // 4}") for i in range(40)]
    batch = build_rows(trajectories, RowSettings(max_row_tokens=128, token_budget=512))

    assert sorted(id(r) for pack in batch.packs for r in pack) == sorted(id(r) for r in batch.rows)
    for pack in batch.packs:
        # The shared prefix is computed once, each row's rest padded to the longest.
        shared, longest = shared_prefix(pack), max(len(r.tokens) for r in pack)
        assert packed_tokens(pack) == shared + len(pack) * (longest - 1 - shared) <= 512
    assert len(batch.packs) < len(batch.rows)  # rows do share micro-batches
    # Sharing packs more rows into the budget than rows x longest would.
    assert any(len(pack) * max(len(r.tokens) for r in pack) > 512 for pack in batch.packs)
    assert pack_rows([], 512) == []


def test_the_shared_prefix_is_what_every_row_reads_alike_and_leaves_each_row_a_position() -> None:
    def rows(*token_lists: list[int]) -> list[Row]:
        return [
            Row(i, "g", tokens, [1] * len(tokens), [0.0] * len(tokens), 0.0, 1.0, 0.0)
            for i, tokens in enumerate(token_lists)
        ]

    assert shared_prefix(rows([1, 2, 3, 4, 5], [1, 2, 3, 9], [1, 2, 3, 4, 7])) == 3
    assert shared_prefix(rows([1, 2, 3, 4, 5], [1, 2])) == 1  # the shorter row's only input
    assert shared_prefix(rows([1, 2, 3], [1, 2, 3])) == 1  # the longest keeps one position its own
    assert shared_prefix(rows([4, 2, 3], [1, 2, 3])) == 0
    assert shared_prefix(rows([1, 2, 3, 4])) == 0  # one row: nothing to share
    # Rows of two prompts, shuffled, come out packed by prompt.
    first, second = [5] * 30, [6] * 30
    mixed = rows(first + [1], second + [2], first + [3, 3], second + [4], first + [5])
    packs = pack_rows(mixed, token_budget=40)
    assert [sorted(r.tokens[0] for r in pack) for pack in packs] == [[5, 5, 5], [6, 6]]
    # Inputs are a row's tokens but its last: 30 shared + 3 rows x 1 padded own input; rows of
    # one length share one input less, so each keeps one of its own.
    assert [packed_tokens(pack) for pack in packs] == [30 + 3 * 1, 29 + 2 * 1]


def test_collate_shifts_targets_pads_and_weights_each_token() -> None:
    first = make_call([1, 2, 3], [4, 5], [-0.1, -0.2])
    batch = build_rows([make_episode([first], 1.0), one_call(1, 0.0)], RowSettings())
    micro = collate(batch.rows, batch.denominator, "cpu")

    assert micro.inputs.tolist() == [[1, 2, 3, 4], [1, 2, 3, 0]]
    assert micro.targets.tolist() == [[2, 3, 4, 5], [2, 3, 10, 0]]
    assert micro.mask.tolist() == [[0, 0, 1, 1], [0, 0, 1, 0]]
    assert micro.old_logprobs[0].tolist() == pytest.approx([0, 0, -0.1, -0.2])
    assert micro.advantages.tolist() == [0.5, -0.5]
    assert micro.coefficients.flatten().tolist() == pytest.approx([0, 0, 0.25, 0.25, 0, 0, 0.5, 0])
