"""Group-relative advantages, and which groups carry a learning signal.

GRPO has no value model: the baseline for an episode is the mean reward of its group (the same
task attempted G times by the same policy), so

    advantage_i = r_i - mean(r)                    (Dr. GRPO; the default)
    advantage_i = (r_i - mean(r)) / (std(r) + eps)  (GRPO's scaling, optional)

`std` is the population standard deviation of the group's rewards. A group whose rewards are all
equal has every advantage zero: it costs a forward and backward pass and teaches nothing, so it is
dropped, and the fraction of such groups is the first thing to watch (a policy collapsing onto
one answer makes every group uniform). Optionally only the groups with the highest reward
variance are kept, the ones most informative per token.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

STD_EPSILON = 1e-6
VARIANCE_FLOOR = 1e-12  # rewards closer than this are treated as equal


def group_advantages(rewards: Sequence[float], *, scale_by_std: bool = False) -> list[float]:
    """The advantage of each reward in one group (see the module docstring)."""
    mean = sum(rewards) / len(rewards)
    centred = [r - mean for r in rewards]
    if not scale_by_std:
        return centred
    std = reward_variance(rewards) ** 0.5
    return [a / (std + STD_EPSILON) for a in centred]


def reward_variance(rewards: Sequence[float]) -> float:
    mean = sum(rewards) / len(rewards)
    return sum((r - mean) ** 2 for r in rewards) / len(rewards)


@dataclass(frozen=True)
class GroupSelection:
    kept: list[str]  # group keys to train on, in the order given
    zero_variance: int  # groups dropped because all their rewards were equal
    low_variance: int  # groups with variance dropped by `top_fraction`


def select_groups(groups: Mapping[str, Sequence[float]], top_fraction: float = 1.0) -> GroupSelection:
    """The groups with reward variance; of those, the `top_fraction` with the highest variance
    (at least one, ties broken by order)."""
    variances = {key: reward_variance(rewards) for key, rewards in groups.items()}
    varied = [key for key, variance in variances.items() if variance > VARIANCE_FLOOR]
    keep = len(varied) if top_fraction >= 1 else max(1, round(top_fraction * len(varied)))
    ranked = sorted(varied, key=lambda key: -variances[key])[:keep]
    chosen = set(ranked)
    return GroupSelection(
        kept=[key for key in varied if key in chosen],
        zero_variance=len(groups) - len(varied),
        low_variance=len(varied) - len(chosen),
    )
