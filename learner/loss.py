"""The GRPO-family policy loss, per token, over the executor's own sampled tokens.

The algorithm (GRPO, Shao et al. 2024, with DAPO's decoupled clip):

    ratio_t  = exp(log pi(a_t) - log pi_old(a_t))
    J        = sum_t c_t * min(ratio_t * A, clip(ratio_t, 1 - eps_low, 1 + eps_high) * A)
               - beta * sum_t c_t * KL_t
    loss     = -J

`A` is the episode's group-relative advantage (learner/advantages.py), the same for all its
tokens; `c_t` is mask x weight / denominator (learner/rows.py), which is where GRPO's per-sample
mean, DAPO's token mean and Dr. GRPO's constant differ, so one loss serves all three.
`KL_t = exp(ref - new) - (ref - new) - 1` is Schulman's k3 estimator of KL(pi || pi_ref) from
tokens sampled by pi: unbiased, always >= 0.

Where it departs from the textbook:
- pi_old is not a copy of the model kept around: it is the log-probability captured when the
  executor sampled each token (vLLM or the in-process model), so the ratio also absorbs any
  numerical difference between the sampler and the trainer (and is ~1, not exactly 1, on the
  first update).
- Those captured logprobs are raw model logprobs (temperature 1, no top-p; see
  runtime/executor/sampling.py), and so is `new`: training assumes tokens were sampled at
  temperature 1 and top-p 1. Tokens sampled otherwise are trained on as if sampled from the raw
  distribution (rows.py counts them), unless the trainer is told the temperature
  (`TrainSettings.temperature`): then both sides of the ratio are tempered, the old side
  recomputed by the trainer (learner/train.py).
- The reference for the KL term is the base model with the LoRA adapter disabled (or a frozen
  copy of the starting weights in full fine-tuning), not the previous checkpoint; beta defaults
  to 0 (DAPO, Dr. GRPO), which leaves only the clip as the trust region.
- There is no value model and no entropy bonus.
- With a served sampler (vLLM), `old` is the trainer's own recomputed log-probability, and each
  token's policy-gradient term is multiplied by `is_weights`, the truncated importance weight
  min(pi_old / pi_sampler, C) (learner/mismatch.py): decoupled PPO with TIS, as verl does it.
  The KL term is not weighted.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class PolicyLoss:
    loss: torch.Tensor  # () to minimise, with gradient
    clipped: torch.Tensor  # (B, T) bool: the clip was active, so the token gave no gradient
    approx_kl: torch.Tensor  # (B, T) k3 estimate of KL(pi_old || pi) per token, detached
    kl: torch.Tensor | None  # (B, T) k3 estimate of KL(pi || pi_ref) per token, detached


def policy_loss(
    new: torch.Tensor,
    old: torch.Tensor,
    advantages: torch.Tensor,
    coefficients: torch.Tensor,
    *,
    epsilon_low: float,
    epsilon_high: float,
    beta: float = 0.0,
    reference: torch.Tensor | None = None,
    is_weights: torch.Tensor | None = None,
) -> PolicyLoss:
    """`new`, `old`, `reference`, `coefficients`, `is_weights` (detached): (B, T); `advantages`: (B,)."""
    advantage = advantages[:, None]  # (B, 1)
    ratio = torch.exp(new - old)  # (B, T)
    unclipped = ratio * advantage  # (B, T)
    clipped = ratio.clamp(1 - epsilon_low, 1 + epsilon_high) * advantage  # (B, T)
    per_token = -torch.minimum(unclipped, clipped)  # (B, T)
    if is_weights is not None:
        per_token = per_token * is_weights.detach()  # (B, T) TIS
    kl = None
    if reference is not None:
        kl = torch.exp(reference - new) - (reference - new) - 1  # (B, T)
        per_token = per_token + beta * kl
    loss = (per_token * coefficients).sum()
    with torch.no_grad():
        approx_kl = ratio - 1 - (new - old)  # (B, T)
    return PolicyLoss(loss, (clipped < unclipped).detach(), approx_kl, None if kl is None else kl.detach())
