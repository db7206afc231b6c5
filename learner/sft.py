"""Warm start: supervised fine-tuning of the executor on (messages, target text) examples.

    examples = examples_from_trajectories(trajectories)   # successful episodes' executor calls
    result = sft(local_model, examples, SFTSettings(), on_epoch=evaluate)
    result.policy.save_model(directory)                   # the warm-started executor

An example is a chat and the reply the executor should give: a successful (planner's) episode's
call, or a task suite's reference solution rendered as the executor's JSON action. The chat is
encoded exactly as the executor backends encode it (`ExecutorTokenizer.encode_chat`: the chat
template with the generation prompt), the target as its plain encoding plus the eos token, so
the model learns to stop where a sampled reply stops. The loss is the mean negative
log-likelihood of the target tokens of each optimizer step's examples; prompt tokens are
context only.

Epochs end with `on_epoch(report, policy)`: `policy.sampler` is a `LocalModel` over the weights
as trained so far, so the caller can measure held-out success with the real executor path
(`LocalBackend(policy.sampler)`), keep the best epoch (`policy.save_model(directory)`), and
return True to stop ("trained until its held-out success stops improving"). The policy is made
as in learner/policy.py: a copy of a `LocalModel`'s weights (full fine-tuning) or an adapter on
them (LoRA; `policy.close()` takes it out), a bare `PreTrainedModel` trained in place; by default
all weights train, since a model too small or too new to know the action format learns it faster
that way than through a LoRA adapter.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import torch

from learner.logprobs import token_logprobs
from learner.micro_batch import collate
from learner.policy import LoraSettings, TrainablePolicy
from learner.rows import Row, pack_rows
from learner.threads import check_threads, training_threads
from memory.trajectory_records import Trajectory
from runtime.executor.local_model import LocalModel
from runtime.executor.tokenization import ExecutorTokenizer

if TYPE_CHECKING:
    from transformers import PreTrainedModel


@dataclass(frozen=True)
class SFTExample:
    messages: list[dict[str, Any]]  # the chat the executor is given (OpenAI format)
    target: str  # the reply it should give


@dataclass(frozen=True)
class SFTSettings:
    lora: LoraSettings | None = None  # None: every weight trains
    learning_rate: float = 1e-3
    max_epochs: int = 20
    examples_per_step: int = 16
    token_budget: int = 8192  # per micro-batch, padding included
    max_row_tokens: int = 2048  # longer examples are left out
    max_grad_norm: float = 1.0
    weight_decay: float = 0.0
    # "constant", or "cosine": a linear warm-up over the first `warmup_fraction` of the
    # max_epochs' steps, then a cosine decay to `final_lr_fraction` of the rate at the last.
    schedule: Literal["constant", "cosine"] = "constant"
    warmup_fraction: float = 0.05
    final_lr_fraction: float = 0.1
    logprob_chunk_tokens: int = 1024
    # Recompute each decoder layer in the backward pass (learner/policy.py), as GRPO's
    # `[learner] gradient_checkpointing`; rows are then computed whole (no shared-prefix pass).
    gradient_checkpointing: bool = False
    seed: int = 0  # the order of examples in each epoch, LoRA's initialisation
    threads: int | None = None  # torch threads while an epoch trains (learner/threads.py); None: as set

    def __post_init__(self) -> None:
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive; got {self.learning_rate}")
        if self.schedule not in ("constant", "cosine"):
            raise ValueError(f"schedule must be 'constant' or 'cosine'; got {self.schedule!r}")
        if not 0 <= self.warmup_fraction < 1 or not 0 <= self.final_lr_fraction <= 1:
            raise ValueError("warmup_fraction must be in [0, 1) and final_lr_fraction in [0, 1]")
        if self.max_epochs < 1 or self.examples_per_step < 1:
            raise ValueError("max_epochs and examples_per_step must be at least 1")
        check_threads(self.threads)
        if self.token_budget < self.max_row_tokens:
            raise ValueError(
                f"token_budget ({self.token_budget}) must be at least max_row_tokens ({self.max_row_tokens})"
            )


@dataclass(frozen=True)
class EpochReport:
    epoch: int  # 1, 2, ...
    loss: float  # mean target-token NLL over the epoch, each batch measured before its update
    examples: int
    tokens: int  # target tokens
    seconds: float
    learning_rate: float = 0.0  # the rate of the epoch's last step


@dataclass(frozen=True)
class SFTResult:
    policy: TrainablePolicy
    epochs: list[EpochReport]
    stopped_early: bool  # on_epoch asked to stop before max_epochs
    skipped: int  # examples longer than max_row_tokens


EpochCallback = Callable[[EpochReport, TrainablePolicy], bool | None]  # True: stop


def sft(
    model: LocalModel | PreTrainedModel,
    examples: Sequence[SFTExample],
    settings: SFTSettings,
    *,
    on_epoch: EpochCallback | None = None,
    tokenizer: ExecutorTokenizer | None = None,
    start_adapter: str | Path | None = None,
) -> SFTResult:
    """Train on `examples` for up to `max_epochs`; see the module docstring. `start_adapter`: a
    PEFT adapter to continue (LoRA settings needed), e.g. the executor's current version."""
    policy = TrainablePolicy.create(
        model, settings.lora, start_adapter=start_adapter, tokenizer=tokenizer, seed=settings.seed,
        gradient_checkpointing=settings.gradient_checkpointing,
    )  # fmt: skip
    if policy.tokenizer is None:
        raise ValueError("SFT encodes chats: give a LocalModel, or tokenizer=... with a bare model")
    rows = target_rows(policy.tokenizer, examples, settings.max_row_tokens)
    if not rows:
        raise ValueError(f"no example fits in max_row_tokens={settings.max_row_tokens}")
    optimizer = torch.optim.AdamW(
        policy.trainable_parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay
    )
    total_steps = settings.max_epochs * math.ceil(len(rows) / settings.examples_per_step)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_factor(settings, step, total_steps)
    )
    rate = settings.learning_rate
    tokens = sum(sum(row.mask) for row in rows)
    reports: list[EpochReport] = []
    stopped_early = False
    for epoch in range(1, settings.max_epochs + 1):
        started = time.perf_counter()
        order = list(rows)
        random.Random(settings.seed * 1_000_003 + epoch).shuffle(order)
        nll = 0.0
        with training_threads(settings.threads):  # not around on_epoch: it samples
            for first in range(0, len(order), settings.examples_per_step):
                rate = optimizer.param_groups[0]["lr"]
                nll += train_step(
                    policy, optimizer, order[first : first + settings.examples_per_step], settings
                )
                schedule.step()
        reports.append(
            EpochReport(epoch, nll / tokens, len(rows), tokens, time.perf_counter() - started, rate)
        )
        if on_epoch is not None and on_epoch(reports[-1], policy):
            stopped_early = epoch < settings.max_epochs
            break
    return SFTResult(policy, reports, stopped_early, skipped=len(examples) - len(rows))


def lr_factor(settings: SFTSettings, step: int, total_steps: int) -> float:
    """The learning rate at optimizer step `step` (0-based) of `total_steps`, as a fraction of
    `settings.learning_rate`."""
    if settings.schedule == "constant":
        return 1.0
    warmup = int(settings.warmup_fraction * total_steps)
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total_steps - 1 - warmup))
    floor = settings.final_lr_fraction
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))


def train_step(
    policy: TrainablePolicy, optimizer: torch.optim.Optimizer, batch: list[Row], settings: SFTSettings
) -> float:
    """One optimizer step on `batch`; returns the summed target NLL (before the update)."""
    target_tokens = float(sum(sum(row.mask) for row in batch))
    nll_sum = 0.0
    for pack in pack_rows(batch, settings.token_budget):
        micro = collate(pack, target_tokens, policy.device)
        logprobs, _ = token_logprobs(
            policy.module, micro.inputs, micro.targets,
            chunk_tokens=settings.logprob_chunk_tokens,
            shared=0 if settings.gradient_checkpointing else micro.shared,
        )  # fmt: skip  # (B, T)
        loss = -(logprobs * micro.coefficients).sum()  # mean over the step's target tokens
        loss.backward()
        nll_sum += loss.item() * target_tokens
    torch.nn.utils.clip_grad_norm_(policy.trainable_parameters(), settings.max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return nll_sum


@torch.no_grad()
def target_loss(
    policy: TrainablePolicy, examples: Sequence[SFTExample], *, chunk_tokens: int = 1024
) -> float:
    """Mean NLL per target token of `examples` under `policy`, without training."""
    if policy.tokenizer is None:
        raise ValueError("this policy has no tokenizer")
    rows = target_rows(policy.tokenizer, examples, max_row_tokens=1 << 30)
    nll, tokens = 0.0, 0
    for pack in pack_rows(rows, token_budget=8192):
        micro = collate(pack, 1.0, policy.device)
        logprobs, _ = token_logprobs(
            policy.module, micro.inputs, micro.targets, chunk_tokens=chunk_tokens, shared=micro.shared
        )
        nll -= (logprobs * micro.mask).sum().item()
        tokens += int(micro.mask.sum().item())
    return nll / tokens


def target_rows(
    tokenizer: ExecutorTokenizer, examples: Iterable[SFTExample], max_row_tokens: int
) -> list[Row]:
    """One row per example that fits: prompt ids (mask 0), then target ids + eos (mask 1)."""
    rows = []
    for index, example in enumerate(examples):
        prompt = tokenizer.encode_chat(example.messages)
        target = tokenizer.encode_text(example.target)
        if tokenizer.eos_id is not None:
            target.append(tokenizer.eos_id)
        if len(prompt) + len(target) > max_row_tokens:
            continue
        tokens = prompt + target
        mask = [0] * len(prompt) + [1] * len(target)
        rows.append(Row(index, "sft", tokens, mask, [0.0] * len(tokens), 1.0, 1.0, 0.0))
    return rows


def examples_from_trajectories(
    trajectories: Iterable[Trajectory], *, min_reward: float = 1.0
) -> list[SFTExample]:
    """Each executor call of each training episode rewarded at least `min_reward` (its chat and
    its reply text): what a successful run said, to be imitated. Calls without their messages
    are skipped."""
    examples = []
    for trajectory in trajectories:
        episode = trajectory.episode
        if episode.split == "heldout" or episode.reward is None or episode.reward < min_reward:
            continue
        for call in trajectory.calls:
            if call.role == "executor" and call.messages and call.text:
                examples.append(SFTExample(list(call.messages), call.text))
    return examples
