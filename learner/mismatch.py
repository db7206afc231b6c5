"""Sampler/trainer mismatch: how far the log-probabilities the sampler reported for its tokens are
from the trainer's, and the truncated importance-sampling weight that corrects for it.

    meter = MismatchMeter()
    meter.add(trainer_old, sampler, mask)          # (B, T) each, per micro-batch of a step
    meter.result(cap=2.0)                          # Mismatch | None: the step's figures
    weights = tis_weights(trainer_old, sampler, cap=2.0)   # (B, T), detached

A served executor (vLLM, `temper serve executor`) samples with other kernels and often another
precision than the trainer, so the logprobs it reports (`sampler`, q) are not the trainer's own
log-probabilities of the same tokens under the same weights (`trainer_old`, p). Training as if
they were is off-policy without saying so; Yao et al. ("Your efficient RL framework secretly
brings you off-policy RL training", 2025) showed it can collapse a run. The correction used by
verl (`tis_imp_ratio_cap`) and most current engines is truncated importance sampling (TIS):

    ratio_t  = p(a_t) / q(a_t)              the trainer's old policy over the sampler's
    w_t      = min(ratio_t, C)              detached; C = `[learner] tis_cap`

and the policy-gradient term of each token is multiplied by w_t (learner/loss.py), while the
PPO/GRPO clip works on pi / p, the trainer's own old policy (decoupled PPO: the trust region
around the trainer's policy, the importance weight for where the tokens came from).

The figures (`Mismatch`), over the step's trained tokens (mask 1):
- `kl`: the mean per-token k3 estimate of KL(q || p), `ratio - 1 - log ratio`, with tokens
  drawn from q (the sampler): an unbiased, non-negative estimate from the sampled tokens only
  (the sampler's full distribution is not known; the k3 estimator is the one that needs none);
- the distribution of `ratio`: mean, p5, p50, p95, max, and the fraction above the cap.

When the sampler is the trainer's own weights (the local backend) p and q agree to float
rounding: the weights are 1 and the loss is the uncorrected one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Mismatch:
    tokens: int  # trained tokens measured
    kl: float  # mean k3 estimate of KL(sampler || trainer) per token
    ratio_mean: float  # trainer / sampler probability of the sampled token
    ratio_p5: float
    ratio_p50: float
    ratio_p95: float
    ratio_max: float
    above_cap: float  # fraction of tokens whose ratio exceeds the TIS cap (0 without a cap)

    def line(self) -> str:
        return (
            f"mismatch kl {self.kl:.2e} ratio {self.ratio_mean:.4f} "
            f"[p5 {self.ratio_p5:.4f} p50 {self.ratio_p50:.4f} p95 {self.ratio_p95:.4f} "
            f"max {self.ratio_max:.3f}] above cap {self.above_cap:.3f}"
        )


def log_ratio(trainer_old: torch.Tensor, sampler: torch.Tensor) -> torch.Tensor:
    """log p - log q per token (B, T), detached; a float64 difference of float32 inputs, so a
    mismatch of 1e-7 is not lost to rounding."""
    return (trainer_old.detach().double() - sampler.detach().double()).float()


def tis_weights(trainer_old: torch.Tensor, sampler: torch.Tensor, cap: float) -> torch.Tensor:
    """min(p / q, cap) per token (B, T), detached: the policy-gradient term's weight."""
    if cap <= 0:
        raise ValueError(f"the TIS cap must be positive; got {cap}")
    return torch.exp(log_ratio(trainer_old, sampler)).clamp(max=cap)


class MismatchMeter:
    """The ratios of one step's trained tokens, gathered over its micro-batches."""

    def __init__(self) -> None:
        self._logs: list[torch.Tensor] = []  # (N_i,) log ratios of trained tokens

    def add(self, trainer_old: torch.Tensor, sampler: torch.Tensor, mask: torch.Tensor) -> None:
        """`trainer_old`, `sampler`, `mask`: (B, T); only tokens where `mask` is 1 count."""
        self._logs.append(log_ratio(trainer_old, sampler)[mask.bool()].cpu())

    def gathered(self, gather: Callable[[torch.Tensor], torch.Tensor]) -> MismatchMeter:
        """A meter holding every rank's tokens (`gather`: DataParallel.gather), so the figures
        of a data-parallel step are the whole batch's, not one shard's."""
        whole = MismatchMeter()
        whole._logs = [gather(torch.cat(self._logs) if self._logs else torch.zeros(0))]
        return whole

    def result(self, cap: float | None) -> Mismatch | None:
        """The step's figures; None when no trained token was measured."""
        if not self._logs:
            return None
        logs = torch.cat(self._logs).double()  # (N,)
        if logs.numel() == 0:
            return None
        ratio = torch.exp(logs)  # (N,)
        k3 = ratio - 1 - logs  # (N,) >= 0
        p5, p50, p95 = torch.quantile(ratio, torch.tensor([0.05, 0.5, 0.95], dtype=ratio.dtype)).tolist()
        above = float((ratio > cap).double().mean()) if cap is not None else 0.0
        return Mismatch(
            tokens=int(ratio.numel()),
            kl=float(k3.mean()),
            ratio_mean=float(ratio.mean()),
            ratio_p5=p5,
            ratio_p50=p50,
            ratio_p95=p95,
            ratio_max=float(ratio.max()),
            above_cap=above,
        )
