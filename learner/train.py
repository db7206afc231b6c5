"""GRPO on the executor's own trajectories: one training step per batch of rows.

    trainer = GRPOTrainer(local_model, TrainSettings(), checkpoint_dir)   # resumes if it can
    batch = build_rows(trajectories, RowSettings())                      # learner/rows.py
    metrics = trainer.step(batch)                                         # StepMetrics
    trainer.policy.sampler            # a LocalModel over the trained weights, to sample with
    trainer.save_adapter(directory)   # the candidate, in PEFT format, for the gate
    trainer.policy.save_model(directory)   # full fine-tuning: a model directory instead

A step, top to bottom:
1. for each micro-batch of the batch (rows packed within a token budget):
   a. reference log-probabilities, when the KL term is on: no gradient, adapter disabled;
   b. the policy's log-probabilities of the row tokens, a chunk of positions at a time
      (learner/logprobs.py), and the entropy of the distribution at the trained positions;
   c. the clipped policy loss (learner/loss.py), already normalised for the whole batch, so
      backward() on each micro-batch accumulates the batch gradient;
2. clip the gradient norm, one AdamW step;
3. steps 1-2 again, `updates_per_batch` times in all (GRPO's mu, PPO's epochs): the old policy
   stays the captured logprobs, so from the second update on the ratios depart from 1 and the
   clip bounds how far the batch moves the policy;
4. a checkpoint every `checkpoint_every` steps (learner/checkpoint.py).

The old policy is the captured logprobs in the rows; nothing is sampled or recomputed here
before the update. More than one update per batch gets more learning out of each replay, which
costs more than an update (on a CPU, replaying 16 tasks 8 times takes about three times as long
as one update on their rows); the clip is what keeps the extra updates from overfitting the
batch.

Except at a `temperature` other than 1. Replays sampled hotter than the model (to explore: a
group whose attempts all fail teaches nothing) drew their tokens from softmax(logits / T), and
the captured raw logprobs are not that distribution. Then every log-probability here is taken
at T, and the old policy is the trainer's own at T: the first update's log-probabilities,
detached (the weights that sampled, since replays sample with the policy being trained), kept
for the later updates. The first update's ratios are then exactly 1.

And except when the rows were sampled by a server (`tis_cap` set: vLLM, `temper serve
executor`), whose logprobs differ from the trainer's (kernels, precision). Then the old policy is
the trainer's own, recomputed the same way, and the sampler's logprobs enter only through the
truncated importance weight min(old / sampler, tis_cap) on each token's policy-gradient term
(learner/mismatch.py). Every step measures the sampler against the trainer on its first update
(`StepMetrics.mismatch`), with or without the correction.

Determinism: a step uses no randomness (no dropout: the model stays in eval mode), so the same
rows on the same weights and optimizer state give the same update; that is what makes a resumed
run equal an uninterrupted one. The trainer logs nothing itself: `StepMetrics` is for the caller.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from learner.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from learner.data_parallel import DataParallel
from learner.fsdp import even_micro_batches, shard_base_weights
from learner.logprobs import token_logprobs
from learner.loss import policy_loss
from learner.micro_batch import MicroBatch, collate
from learner.mismatch import Mismatch, MismatchMeter, tis_weights
from learner.policy import LoraSettings, TrainablePolicy
from learner.rows import RowBatch
from learner.threads import check_threads, training_threads
from runtime.executor.local_model import LocalModel
from runtime.executor.tokenization import ExecutorTokenizer

if TYPE_CHECKING:
    from transformers import PreTrainedModel


@dataclass(frozen=True)
class TrainSettings:
    lora: LoraSettings | None = field(default_factory=LoraSettings)  # None: full fine-tuning
    learning_rate: float = 1e-4
    epsilon_low: float = 0.2  # ratio floor 1 - eps_low (tokens with negative advantage)
    epsilon_high: float = 0.28  # ratio ceiling 1 + eps_high (DAPO's clip-higher)
    beta: float = 0.0  # weight of the KL term against the reference; 0 turns it off
    max_grad_norm: float = 1.0
    updates_per_batch: int = 1  # optimizer updates on each batch (GRPO's mu); a step makes them all
    # The temperature the rows were sampled at: log-probabilities are taken at it, and at any
    # value but 1 the old policy is recomputed on the first update (module docstring).
    temperature: float = 1.0
    # Truncated importance sampling against a sampler other than these weights (a served
    # executor: learner/mismatch.py): the old policy is the trainer's own, recomputed on the first
    # update, and each token's policy-gradient term is weighted by min(old / sampler, tis_cap).
    # None: the captured logprobs are the old policy (the sampler is this policy's own weights).
    tis_cap: float | None = None
    weight_decay: float = 0.0
    adam_betas: tuple[float, float] = (0.9, 0.99)
    logprob_chunk_tokens: int = 1024  # positions x rows whose logits exist at once
    # Recompute each decoder layer in the backward pass instead of keeping its activations
    # (learner/policy.py): memory per layer boundary, not per layer's inside, for one more forward.
    # Rows are then computed whole: a shared prefix's key-value cache cannot be recomputed.
    gradient_checkpointing: bool = False
    checkpoint_every: int = 1  # steps; 0: never
    keep_checkpoints: int = 2
    seed: int = 0  # LoRA's initialisation
    # torch threads while a step trains (learner/threads.py), where nothing samples meanwhile;
    # None: as the process has it.
    threads: int | None = None

    def __post_init__(self) -> None:
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive; got {self.learning_rate}")
        if not 0 <= self.epsilon_low < 1 or self.epsilon_high < 0:
            raise ValueError(
                f"clip range must be 0 <= epsilon_low < 1 and epsilon_high >= 0; "
                f"got {self.epsilon_low}, {self.epsilon_high}"
            )
        if self.beta < 0:
            raise ValueError(f"beta must be >= 0; got {self.beta}")
        if self.max_grad_norm <= 0:
            raise ValueError(f"max_grad_norm must be positive; got {self.max_grad_norm}")
        if self.updates_per_batch < 1:
            raise ValueError(f"updates_per_batch must be at least 1; got {self.updates_per_batch}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be positive (training samples); got {self.temperature}")
        if self.tis_cap is not None and self.tis_cap <= 0:
            raise ValueError(f"tis_cap must be positive (None turns TIS off); got {self.tis_cap}")
        if self.tis_cap is not None and self.temperature != 1.0:
            raise ValueError(
                "tis_cap needs temperature 1: the sampler's captured logprobs are raw, so at another "
                "temperature they are not the distribution the tokens were drawn from"
            )
        if self.logprob_chunk_tokens < 1:
            raise ValueError(f"logprob_chunk_tokens must be at least 1; got {self.logprob_chunk_tokens}")
        check_threads(self.threads)
        if self.checkpoint_every < 0 or self.keep_checkpoints < 1:
            raise ValueError("checkpoint_every must be >= 0 and keep_checkpoints >= 1")


# A mismatch below this is float rounding (a sampler on the trainer's own weights: kl ~1e-14):
# the progress line leaves it out; as_dict and metrics.jsonl keep every step's figures.
_NEWS_KL = 1e-9


@dataclass(frozen=True)
class StepMetrics:
    step: int  # steps done, this one included (0 when nothing was trained)
    loss: float  # at the first update: the policy that sampled the batch
    reward_mean: float  # over the batch's training episodes, dropped groups included
    # approx_kl and clip_fraction are measured before the step's last update: with several
    # updates per batch, how far the earlier ones moved the policy from the one that sampled.
    approx_kl: float  # mean k3 KL(pi_old || pi) over trained tokens
    kl_ref: float | None  # mean k3 KL(pi || pi_ref) over trained tokens (when beta > 0), first update
    clip_fraction: float  # trained tokens whose ratio was clipped
    entropy: float  # mean entropy of the next-token distribution at trained tokens, first update
    zero_variance_fraction: float
    rows: int
    tokens: int  # row tokens, padding excluded
    trained_tokens: int  # mask == 1
    grad_norm: float  # before clipping, the last update's
    seconds: float
    secret_episodes: int = 0  # the batch's episodes left out for holding a secret
    # The sampler's logprobs against the trainer's before the step's first update (temperature 1;
    # learner/mismatch.py); None when no token was trained.
    mismatch: Mismatch | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        kl_ref = "-" if self.kl_ref is None else f"{self.kl_ref:.4f}"
        return (
            f"step {self.step}  reward {self.reward_mean:.3f}  loss {self.loss:+.4f}  "
            f"kl {self.approx_kl:.5f}  kl_ref {kl_ref}  clip {self.clip_fraction:.3f}  "
            f"entropy {self.entropy:.3f}  zero_var {self.zero_variance_fraction:.2f}  "
            f"rows {self.rows}  tokens {self.tokens}  {self.seconds * 1000:.0f} ms"
            + (f"  secret episodes left out {self.secret_episodes}" if self.secret_episodes else "")
            + (
                f"  {self.mismatch.line()}"
                if self.mismatch is not None and self.mismatch.kl > _NEWS_KL
                else ""
            )
        )


class GRPOTrainer:
    """See the module docstring. `model`: a `LocalModel` (LoRA: an adapter on its own weights,
    beside those it serves; full fine-tuning: a copy; hand them back through `policy.sampler` or
    `save_adapter`) or a `PreTrainedModel` (trained in place).
    `start_adapter`: a PEFT adapter to continue from (the executor's current version).
    `checkpoint_dir`: where checkpoints go; the newest one there is resumed from.
    `parallel`: this process's rank when several train together (learner/data_parallel.py):
    each takes a shard of every batch and the gradients are summed; rank 0 writes checkpoints."""

    def __init__(
        self,
        model: LocalModel | PreTrainedModel,
        settings: TrainSettings,
        checkpoint_dir: str | Path | None = None,
        *,
        start_adapter: str | Path | None = None,
        tokenizer: ExecutorTokenizer | None = None,
        parallel: DataParallel | None = None,
    ) -> None:
        self.settings = settings
        self.parallel = parallel
        self.policy = TrainablePolicy.create(
            model,
            settings.lora,
            start_adapter=start_adapter,
            tokenizer=tokenizer,
            keep_reference=settings.beta > 0,
            seed=settings.seed,
            gradient_checkpointing=settings.gradient_checkpointing,
        )
        self.optimizer = torch.optim.AdamW(
            self.policy.trainable_parameters(),
            lr=settings.learning_rate,
            betas=settings.adam_betas,
            weight_decay=settings.weight_decay,
        )
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
        self.step_count = 0
        latest = latest_checkpoint(self.checkpoint_dir) if self.checkpoint_dir else None
        if latest is not None:
            self.step_count = load_checkpoint(latest, self.policy, self.optimizer)
        if parallel is not None:  # every rank starts from rank 0's weights, as DDP does
            parallel.broadcast_parameters(self.policy.trainable_parameters())
        if parallel is not None and parallel.fsdp and parallel.world_size > 1:  # learner/fsdp.py
            shard_base_weights(self.policy.module, parallel.device, parallel.world_size)

    def step(self, batch: RowBatch) -> StepMetrics:
        """`updates_per_batch` optimizer updates on `batch`, then a checkpoint when one is due; an
        empty batch (every group uniform) changes nothing and does not count as a step."""
        with training_threads(self.settings.threads):
            return self._step(batch)

    def _step(self, batch: RowBatch) -> StepMetrics:
        started = time.perf_counter()
        updates: list[_Totals] = []  # the metric sums of each update
        grad_norm = 0.0
        meter = MismatchMeter()
        if batch.rows:
            packs = batch.packs if self.parallel is None else self.parallel.shard(batch.packs)
            micro_batches = [collate(pack, batch.denominator, self.policy.device) for pack in packs]
            if self.parallel is not None and self.parallel.fsdp:  # the same forwards on every rank
                most = -(-len(batch.packs) // self.parallel.world_size)
                filler = collate(batch.packs[0], batch.denominator, self.policy.device)
                micro_batches = even_micro_batches(micro_batches, most, filler)
            # The old policy per micro-batch: captured, or None until the first update computes it.
            captured = self.settings.temperature == 1.0 and self.settings.tis_cap is None
            olds = [micro.old_logprobs if captured else None for micro in micro_batches]
            for update in range(self.settings.updates_per_batch):
                updates.append(_Totals())
                for index, micro in enumerate(micro_batches):
                    measure = meter if update == 0 and self.settings.temperature == 1.0 else None
                    olds[index] = self._accumulate(micro, olds[index], updates[-1], measure)
                parameters = self.policy.trainable_parameters()
                if self.parallel is not None:  # the batch's gradient and sums: every rank's shard added
                    self.parallel.sum_gradients(parameters)
                    updates[-1] = self.parallel.sum_fields(updates[-1])
                grad_norm = float(torch.nn.utils.clip_grad_norm_(parameters, self.settings.max_grad_norm))
                self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)
            self.step_count += 1
            every = self.settings.checkpoint_every
            main = self.parallel is None or self.parallel.is_main  # one writer of the shared directory
            if self.checkpoint_dir is not None and every and self.step_count % every == 0 and main:
                self.save_checkpoint()
        first, last = (updates[0], updates[-1]) if updates else (_Totals(), _Totals())
        stats = batch.stats
        return StepMetrics(
            step=self.step_count,
            loss=first.loss,
            reward_mean=stats.reward_mean,
            approx_kl=last.mean(last.approx_kl),
            kl_ref=first.mean(first.kl_ref) if self.settings.beta > 0 else None,
            clip_fraction=last.mean(last.clipped),
            entropy=first.mean(first.entropy),
            zero_variance_fraction=stats.zero_variance_fraction,
            rows=stats.rows,
            tokens=stats.tokens,
            trained_tokens=stats.trained_tokens,
            grad_norm=grad_norm,
            seconds=time.perf_counter() - started,
            secret_episodes=stats.secret_episodes,
            mismatch=(meter if self.parallel is None else meter.gathered(self.parallel.gather)).result(
                self.settings.tis_cap
            ),
        )

    def _accumulate(
        self, micro: MicroBatch, old: torch.Tensor | None, totals: _Totals, meter: MismatchMeter | None
    ) -> torch.Tensor:
        """Forward and backward over one micro-batch, adding to the step's metric sums; `old`: the
        old policy's log-probabilities (B, T), or None for the policy's own now. Returns `old`.
        `meter`: on the first update, measures the sampler's logprobs against the policy's."""
        chunk, temperature = self.settings.logprob_chunk_tokens, self.settings.temperature
        reference = None
        if self.settings.beta > 0:
            with torch.no_grad(), self.policy.reference() as frozen:
                reference, _ = token_logprobs(
                    frozen, micro.inputs, micro.targets,
                    chunk_tokens=chunk, temperature=temperature, shared=micro.shared,
                )  # fmt: skip
        new, entropy = token_logprobs(
            self.policy.module, micro.inputs, micro.targets,
            chunk_tokens=chunk, entropy_at=micro.mask, temperature=temperature,
            shared=0 if self.settings.gradient_checkpointing else micro.shared,
        )  # fmt: skip  # (B, T), (B, T)
        if old is None:
            old = new.detach()
        if meter is not None:
            meter.add(new, micro.old_logprobs, micro.mask)
        cap = self.settings.tis_cap
        terms = policy_loss(
            new,
            old,
            micro.advantages,
            micro.coefficients,
            epsilon_low=self.settings.epsilon_low,
            epsilon_high=self.settings.epsilon_high,
            beta=self.settings.beta,
            reference=reference,
            is_weights=None if cap is None else tis_weights(old, micro.old_logprobs, cap),
        )
        terms.loss.backward()
        mask = micro.mask  # (B, T)
        totals.loss += terms.loss.item()
        totals.tokens += mask.sum().item()
        totals.approx_kl += (terms.approx_kl * mask).sum().item()
        totals.clipped += (terms.clipped * mask).sum().item()
        if entropy is not None:
            totals.entropy += (entropy * mask).sum().item()
        if terms.kl is not None:
            totals.kl_ref += (terms.kl * mask).sum().item()
        return old

    def save_checkpoint(self) -> Path:
        if self.checkpoint_dir is None:
            raise ValueError("this trainer has no checkpoint directory")
        return save_checkpoint(
            self.checkpoint_dir,
            self.step_count,
            self.policy,
            self.optimizer,
            keep=self.settings.keep_checkpoints,
        )

    def save_adapter(self, directory: str | Path) -> Path:
        return self.policy.save_adapter(directory)


@dataclass
class _Totals:
    loss: float = 0.0
    tokens: float = 0.0
    approx_kl: float = 0.0
    kl_ref: float = 0.0
    clipped: float = 0.0
    entropy: float = 0.0

    def mean(self, total: float) -> float:
        return total / self.tokens if self.tokens else 0.0
