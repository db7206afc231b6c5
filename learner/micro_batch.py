"""A micro-batch of rows as tensors: what one forward and backward pass of the trainer takes.

    batch = collate(pack, denominator, device)    # a pack from RowBatch.packs (learner/rows.py)

Rows are right-padded to the longest. Right padding needs no attention mask under causal
attention: a real token never attends to a later (padding) position, and padded positions have
mask 0. `collate` shifts by one position: `inputs[t]` predicts `targets[t] = tokens[t + 1]`, and
the mask, captured logprobs and loss coefficients are those of the target token. `shared` is
how many leading inputs all rows have in common (learner/rows.py `shared_prefix`: a group's
prompt, or at least the system prompt), which the trainer's forward pass computes once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from learner.rows import Row, shared_prefix


@dataclass(frozen=True)
class MicroBatch:
    inputs: torch.Tensor  # (B, T) token ids the model reads
    targets: torch.Tensor  # (B, T) the next token at each position
    mask: torch.Tensor  # (B, T) 1.0 where the target is a trained (sampled) token
    old_logprobs: torch.Tensor  # (B, T) captured logprob of each target (0 where masked)
    advantages: torch.Tensor  # (B,)
    coefficients: torch.Tensor  # (B, T) mask * weight / denominator: the loss weight per token
    shared: int = 0  # leading input positions every row has in common


def collate(rows: Sequence[Row], denominator: float, device: torch.device | str) -> MicroBatch:
    width = max(len(row.tokens) for row in rows) - 1
    inputs, targets, mask, old = [], [], [], []
    for row in rows:
        pad = width - (len(row.tokens) - 1)
        inputs.append(row.tokens[:-1] + [0] * pad)
        targets.append(row.tokens[1:] + [0] * pad)
        mask.append(row.mask[1:] + [0] * pad)
        old.append(row.old_logprobs[1:] + [0.0] * pad)
    mask_tensor = torch.tensor(mask, dtype=torch.float32, device=device)  # (B, T)
    weights = torch.tensor([row.weight / denominator for row in rows], device=device)  # (B,)
    return MicroBatch(
        inputs=torch.tensor(inputs, dtype=torch.long, device=device),
        targets=torch.tensor(targets, dtype=torch.long, device=device),
        mask=mask_tensor,
        old_logprobs=torch.tensor(old, dtype=torch.float32, device=device),
        advantages=torch.tensor([row.advantage for row in rows], device=device),
        coefficients=mask_tensor * weights[:, None],
        shared=shared_prefix(rows),
    )
