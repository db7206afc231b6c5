"""Training rows from executor trajectories: which tokens the loss sees, and how much each counts.

    batch = build_rows(trajectories, RowSettings())     # -> RowBatch
    batch.rows, batch.packs, batch.denominator, batch.stats
    packs = pack_rows(rows, token_budget)               # what build_rows packs with

Pure Python (no torch): learner/micro_batch.py turns a pack into tensors.

A row is one token sequence the model reads in one forward pass. For an episode of two calls:

    tokens        prompt 1 | completion 1 | tool output, template glue | completion 2
    mask          0 0 0    | 1 1 1 1      | 0 0 0 0 0                  | 1 1 1
    old_logprobs  0 0 0    | captured     | 0 0 0 0 0                  | captured

The mask is 1 exactly on tokens the executor sampled: nothing is re-encoded, so the loss trains
on the very ids whose log-probabilities were captured (`old_logprobs`, the old policy). An
episode stays one row while each call's prompt starts with the previous call's prompt +
completion (`RecordedCall.extends_previous`); where it does not, a new row starts with that
call's full prompt, and `stats.mismatches` counts the cause (memory's MISMATCH_CAUSES).

Rules, in the order they apply:
- Episodes that held a secret are refused (`secret_episodes`): their token ids may spell it, and
  ids cannot be redacted. `store.trajectories.read()` never yields them; the caller passes how
  many it held back (`secret_withheld`), so the count covers both.
- Only training episodes count: held-out ones are refused (counted, never trained on), as are
  episodes without a reward or a group.
- An episode's score is its reward minus `parse_failure_penalty` for each reply that was not a
  valid action, so a garbled reply scores below a wrong command (the gate refuses a candidate
  whose parse failures rise; this trains against them). `reward_mean` stays the plain reward.
- Groups whose scores are all equal are dropped (`advantages.select_groups`); the advantage of
  the episodes left is computed within their group and broadcast to all the episode's rows.
- Only `executor` calls are rows. A call whose prompt + completion exceeds `max_row_tokens` is
  dropped (and the next call starts a new row). Calls whose ids were not sampled (re-tokenised,
  or no logprobs) and completions cut at `max_tokens` (finish_reason "length", DAPO's overlong
  masking) stay in the row as context, masked out.
- Each episode's row tokens carry `weight` (the loss normalisation below), and the loss of a
  whole batch is sum(mask * weight * per-token loss) / `denominator`:
      "episode"   weight 1 / (the episode's sampled tokens), denominator = episodes: each
                  episode sums to 1, so long episodes do not dominate (the default);
      "token"     weight 1, denominator = sampled tokens in the batch (DAPO's token level);
      "constant"  weight 1 / `constant_length`, denominator = episodes (Dr. GRPO).
- Rows are packed into micro-batches (`packs`) of at most `token_budget` computed positions,
  rows that share a prompt together: the trainer computes a micro-batch's shared prefix once
  (`shared_prefix`) and accumulates gradients over the micro-batches.

Calls sampled at a temperature or top-p other than 1 are counted (`stats.tempered_calls`): their
captured logprobs are raw model logprobs, not the sampling distribution's, so for them the ratio
new/old is measured against a policy that did not sample the tokens (see learner/loss.py).
Calls sampled under the action-format constraint are counted too (`stats.constrained_calls`):
their logprobs are raw as well, and differ from the sampling distribution only where the
constraint set a token aside (runtime/executor/sampling.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from learner.advantages import group_advantages, select_groups
from memory import common_prefix, common_prefix_of
from memory.trajectory_records import RecordedCall, Trajectory

Normalisation = Literal["episode", "token", "constant"]
NORMALISATIONS = ("episode", "token", "constant")


@dataclass(frozen=True)
class RowSettings:
    normalisation: Normalisation = "episode"
    scale_by_std: bool = False  # GRPO's (r - mean) / std; off: Dr. GRPO's r - mean
    top_variance_fraction: float = 1.0  # of the groups with variance, keep this share, highest first
    max_row_tokens: int = 2048  # a call longer than this (prompt + completion) is dropped
    token_budget: int = 8192  # per micro-batch: positions computed (`packed_tokens`), padding included
    constant_length: int = 512  # Dr. GRPO's constant: the longest completion one expects
    mask_truncated: bool = True  # completions cut at max_tokens are not trained on
    parse_failure_penalty: float = 0.5  # taken off the score for each reply that was not an action

    def __post_init__(self) -> None:
        if self.normalisation not in NORMALISATIONS:
            raise ValueError(
                f"normalisation must be one of {', '.join(NORMALISATIONS)}; got {self.normalisation!r}"
            )
        if not 0 < self.top_variance_fraction <= 1:
            raise ValueError(f"top_variance_fraction must be in (0, 1]; got {self.top_variance_fraction}")
        if self.max_row_tokens < 2:
            raise ValueError(f"max_row_tokens must be at least 2; got {self.max_row_tokens}")
        if self.token_budget < self.max_row_tokens:
            raise ValueError(
                f"token_budget ({self.token_budget}) must be at least max_row_tokens "
                f"({self.max_row_tokens}): every row has to fit in a micro-batch"
            )
        if self.parse_failure_penalty < 0:
            raise ValueError(f"parse_failure_penalty must be at least 0; got {self.parse_failure_penalty}")
        if self.constant_length < 1:
            raise ValueError(f"constant_length must be at least 1; got {self.constant_length}")


@dataclass(frozen=True)
class Row:
    """One forward pass worth of tokens; `tokens`, `mask` and `old_logprobs` are aligned (T,),
    `mask[t]` and `old_logprobs[t]` describe `tokens[t]` (predicted from `tokens[:t]`)."""

    episode_id: int
    group_id: str
    tokens: list[int]  # (T,)
    mask: list[int]  # (T,) 1 on sampled completion tokens the loss trains on
    old_logprobs: list[float]  # (T,) captured raw logprob of tokens[t]; 0.0 where mask is 0
    advantage: float  # the episode's, broadcast to all its rows
    weight: float  # per-token loss weight, the same for all the episode's rows
    reward: float


@dataclass
class RowStats:
    episodes: int = 0  # given
    trained_episodes: int = 0  # with at least one row in the batch
    secret_episodes: int = 0  # refused: they held a secret (marked in memory)
    heldout_episodes: int = 0  # refused: held-out episodes are never trained on
    unrewarded_episodes: int = 0
    ungrouped_episodes: int = 0
    groups: int = 0  # groups with rewards
    zero_variance_groups: int = 0
    low_variance_groups: int = 0  # dropped by top_variance_fraction
    reward_mean: float = 0.0  # over every rewarded training episode, dropped groups included
    penalised_episodes: int = 0  # scored below their reward for parse failures
    calls: int = 0  # executor calls of the kept episodes
    mismatches: Counter[str] = field(default_factory=Counter)  # new rows by cause
    truncated_calls: int = 0  # finish_reason "length", masked when mask_truncated
    unsampled_calls: int = 0  # re-tokenised or without logprobs: context only
    tempered_calls: int = 0  # sampled at temperature or top-p other than 1
    constrained_calls: int = 0  # sampled under the action-format constraint
    overlong_calls: int = 0  # dropped: longer than max_row_tokens
    rows: int = 0
    tokens: int = 0  # all row tokens
    trained_tokens: int = 0  # mask == 1

    @property
    def zero_variance_fraction(self) -> float:
        return self.zero_variance_groups / self.groups if self.groups else 0.0


@dataclass(frozen=True)
class RowBatch:
    rows: list[Row]
    packs: list[list[Row]]  # micro-batches within the token budget, rows sharing a prompt together
    denominator: float  # the batch loss is sum(mask * weight * loss) / denominator
    stats: RowStats


def build_rows(
    trajectories: Iterable[Trajectory], settings: RowSettings, *, secret_withheld: int = 0
) -> RowBatch:
    """`secret_withheld`: secret-marked episodes the source left out before they got here."""
    stats = RowStats(secret_episodes=secret_withheld)
    groups: dict[str, list[Trajectory]] = {}
    for trajectory in trajectories:
        episode = trajectory.episode
        stats.episodes += 1
        if episode.contains_secret:
            stats.secret_episodes += 1
        elif episode.split == "heldout":
            stats.heldout_episodes += 1
        elif episode.reward is None:
            stats.unrewarded_episodes += 1
        elif episode.group_id is None:
            stats.ungrouped_episodes += 1
        else:
            groups.setdefault(episode.group_id, []).append(trajectory)
    every_reward = [_reward(t) for members in groups.values() for t in members]
    stats.groups = len(groups)
    stats.reward_mean = sum(every_reward) / len(every_reward) if every_reward else 0.0
    penalty = settings.parse_failure_penalty
    stats.penalised_episodes = sum(
        1 for members in groups.values() for t in members if penalty and t.episode.parse_failures
    )
    scores = {key: [_score(t, penalty) for t in members] for key, members in groups.items()}

    selection = select_groups(scores, settings.top_variance_fraction)
    stats.zero_variance_groups = selection.zero_variance
    stats.low_variance_groups = selection.low_variance
    rows: list[Row] = []
    for key in selection.kept:
        advantages = group_advantages(scores[key], scale_by_std=settings.scale_by_std)
        for trajectory, advantage in zip(groups[key], advantages, strict=True):
            rows.extend(_episode_rows(trajectory, key, advantage, settings, stats))

    stats.rows = len(rows)
    stats.tokens = sum(len(row.tokens) for row in rows)
    stats.trained_tokens = sum(sum(row.mask) for row in rows)
    stats.trained_episodes = len({row.episode_id for row in rows})
    if settings.normalisation == "token":
        denominator = float(stats.trained_tokens)
    else:
        denominator = float(stats.trained_episodes)
    return RowBatch(rows, pack_rows(rows, settings.token_budget), max(denominator, 1.0), stats)


def pack_rows(rows: Sequence[Row], token_budget: int) -> list[list[Row]]:
    """Micro-batches whose cost stays within `token_budget`: a micro-batch reads its shared
    prefix once and each row's rest padded to the longest (`packed_tokens`). Rows are sorted by
    their tokens, so rows that share a prompt (a group's attempts; every row shares the system
    prompt) sit together, and packed greedily. A row longer than the budget gets a micro-batch
    of its own."""
    packs: list[list[Row]] = []
    current: list[Row] = []
    shortest = longest = 0
    for row in sorted(rows, key=lambda r: r.tokens):
        length = len(row.tokens)
        if current:
            # Sorted: what the pack and this row share is what its first row and this one share.
            common = common_prefix(current[0].tokens, row.tokens)
            low, high = min(shortest, length), max(longest, length)
            if _cost(len(current) + 1, common, low, high) <= token_budget:
                current.append(row)
                shortest, longest = low, high
                continue
            packs.append(current)
        current, shortest, longest = [row], length, length
    if current:
        packs.append(current)
    return packs


def shared_prefix(rows: Sequence[Row]) -> int:
    """How many leading input positions (a row's tokens but its last) every row of a micro-batch
    has in common, so the trainer computes them once: 0 for a single row; at most the shortest
    row's inputs, and one short of the longest's, so every row keeps a position of its own."""
    lengths = [len(row.tokens) for row in rows]
    return _shared(len(rows), common_prefix_of([row.tokens for row in rows]), min(lengths), max(lengths))


def packed_tokens(rows: Sequence[Row]) -> int:
    """The token positions a micro-batch of `rows` computes: the shared prefix once, the rest
    of every row padded to the longest."""
    lengths = [len(row.tokens) for row in rows]
    return _cost(len(rows), common_prefix_of([row.tokens for row in rows]), min(lengths), max(lengths))


def _shared(rows: int, common: int, shortest: int, longest: int) -> int:
    return 0 if rows < 2 else max(0, min(common, shortest - 1, longest - 2))


def _cost(rows: int, common: int, shortest: int, longest: int) -> int:
    shared = _shared(rows, common, shortest, longest)
    return shared + rows * (longest - 1 - shared)


@dataclass
class _Draft:
    """A row being built: lists grow as calls extend it."""

    tokens: list[int]
    mask: list[int]
    old_logprobs: list[float]


def _episode_rows(
    trajectory: Trajectory, group_id: str, advantage: float, settings: RowSettings, stats: RowStats
) -> list[Row]:
    drafts: list[_Draft] = []
    draft: _Draft | None = None
    for call in trajectory.calls:
        if call.role != "executor":
            continue
        stats.calls += 1
        if call.mismatch is not None:
            stats.mismatches[call.mismatch] += 1
        prompt, completion = call.prompt_ids, call.completion_ids
        if len(prompt) + len(completion) > settings.max_row_tokens:
            stats.overlong_calls += 1
            draft = None  # the next call cannot extend what was dropped
            continue
        if draft is not None and call.extends_previous and len(prompt) >= len(draft.tokens):
            glue = prompt[len(draft.tokens) :]  # tool output and template tokens: not sampled
            draft.tokens.extend(glue)
            draft.mask.extend([0] * len(glue))
            draft.old_logprobs.extend([0.0] * len(glue))
        else:
            draft = _Draft(list(prompt), [0] * len(prompt), [0.0] * len(prompt))
            drafts.append(draft)
        trained = _trained(call, settings, stats)
        draft.tokens.extend(completion)
        draft.mask.extend([int(trained)] * len(completion))
        draft.old_logprobs.extend(call.completion_logprobs if trained else [0.0] * len(completion))

    drafts = [d for d in drafts if any(d.mask)]
    sampled = sum(sum(d.mask) for d in drafts)
    if not sampled:
        return []
    weight = _weight(settings, sampled)
    reward = _reward(trajectory)
    episode_id = trajectory.episode.id
    return [
        Row(episode_id, group_id, d.tokens, d.mask, d.old_logprobs, advantage, weight, reward) for d in drafts
    ]


def _trained(call: RecordedCall, settings: RowSettings, stats: RowStats) -> bool:
    """Whether the loss trains on this call's completion; counts why not."""
    if call.completion_logprobs and len(call.completion_logprobs) != len(call.completion_ids):
        raise ValueError(
            f"call {call.id} has {len(call.completion_logprobs)} logprobs for "
            f"{len(call.completion_ids)} completion ids: the record is damaged"
        )
    if call.sampling.get("temperature", 1.0) != 1.0 or call.sampling.get("top_p", 1.0) != 1.0:
        stats.tempered_calls += 1
    if call.sampling.get("constrained", False):
        stats.constrained_calls += 1
    if call.retokenized or not call.completion_logprobs:
        stats.unsampled_calls += 1
        return False
    if call.finish_reason == "length":
        stats.truncated_calls += 1
        return not settings.mask_truncated
    return True


def _weight(settings: RowSettings, sampled_tokens: int) -> float:
    if settings.normalisation == "episode":
        return 1.0 / sampled_tokens
    if settings.normalisation == "constant":
        return 1.0 / settings.constant_length
    return 1.0


def _score(trajectory: Trajectory, parse_failure_penalty: float) -> float:
    """What the advantage compares within a group: the reward, less the parse-failure penalty."""
    return _reward(trajectory) - parse_failure_penalty * (trajectory.episode.parse_failures or 0)


def _reward(trajectory: Trajectory) -> float:
    reward = trajectory.episode.reward
    if reward is None:  # filtered out before; kept for the type checker
        raise ValueError(f"episode {trajectory.episode.id} has no reward")
    return float(reward)
