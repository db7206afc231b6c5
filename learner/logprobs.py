"""Log-probabilities of target tokens under a causal LM, a chunk of positions at a time.

    logprobs, _ = token_logprobs(model, inputs, targets, chunk_tokens=1024)       # (B, T)
    logprobs, entropy = token_logprobs(model, inputs, targets, entropy_at=mask)    # (B, T) each
    logprobs, _ = token_logprobs(model, inputs, targets, temperature=1.3)           # log_softmax(logits / 1.3)
    logprobs, _ = token_logprobs(model, inputs, targets, shared=micro.shared)       # a common prefix once

The full logits tensor (B, T, V) is never built: the decoder runs once over the whole sequence
(hidden states (B, T, H) are small), then the output head and the log-softmax run on chunks of
at most `chunk_tokens` positions, each gathering its targets' log-probabilities, so at most one
(B, c, V) chunk is alive at a time. With gradients on and more than one chunk, each chunk runs
under activation checkpointing: its logits are recomputed in the backward pass instead of being
kept, which trades one more output-head matmul for memory that no longer grows with T.

Rows that begin alike (a group's attempts at one task share their prompt, and every row shares
the system prompt) need not compute their common beginning once per row: with `shared` = S, the
decoder runs over the first S inputs of one row, its keys and values are repeated for every row,
and each row's remaining positions run on top of them; the S - 1 positions whose targets are
shared too get one row's log-probabilities, expanded. Autograd sums every row's gradient into
the prefix, so the result and the gradients are those of the rows computed apart (to float
rounding). For a GRPO batch of 8-attempt groups with prompts of ~250 tokens and completions of
~20, this is most of the forward and backward work.

The log-probabilities are raw by default (temperature 1, no top-p), matching the executor's
captured ones (runtime/executor/sampling.py); `temperature` divides the logits first, giving the
distribution the sampler drew from at that temperature. The entropy returned is that of the same
next-token distribution at the positions `entropy_at` marks (0 elsewhere: the exp over the vocabulary is not free, and
prompt positions are not what the metric is about), detached: a metric, not a loss term.

Models: any Hugging Face causal LM whose logits are `output_embeddings(decoder(x))` (Llama,
Qwen, Mistral, Phi, ...), bare or inside a peft `PeftModel` (LoRA layers sit in the base model's
modules, so the decoder and head computed here include them, or not under `disable_adapter()`).
Models that post-process logits (soft-capping, logit scaling) are refused rather than computed
wrongly.
"""

from __future__ import annotations

import torch
from torch.utils.checkpoint import checkpoint

from runtime.executor.sampling import base_model, cache_argument

UNSUPPORTED_LOGIT_TRANSFORMS = ("final_logit_softcapping", "logit_scale")


def token_logprobs(
    model: torch.nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    *,
    chunk_tokens: int = 1024,
    entropy_at: torch.Tensor | None = None,
    temperature: float = 1.0,
    shared: int = 0,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(log p(targets[b, t] | inputs[b, :t+1]), entropy where `entropy_at` (B, T) is nonzero, or
    None without it), both (B, T) float32; p is softmax(logits / temperature). `shared`: every
    row's first `shared` inputs are the same tokens (a micro-batch's `shared`), computed once."""
    if temperature <= 0:
        raise ValueError(f"temperature must be positive; got {temperature}")
    decoder, head = split_model(model)
    rows, width = inputs.shape
    if not 1 < shared < width or rows == 1:
        hidden = decoder(input_ids=inputs, use_cache=False).last_hidden_state  # (B, T, H)
        return _head_logprobs(head, hidden, targets, entropy_at, chunk_tokens, temperature)
    if not torch.equal(inputs[1:, :shared], inputs[:1, :shared].expand(rows - 1, shared)):
        raise ValueError(f"the rows' first {shared} inputs differ; they cannot be computed once")
    # The prefix once (1, S, H), then each row's rest (B, T - S, H) reading the prefix's keys and
    # values, repeated for every row: the autograd graph sums the rows' gradients into the prefix.
    cache_name = cache_argument(decoder)
    prefix = decoder(input_ids=inputs[:1, :shared], use_cache=True)
    cache = getattr(prefix, cache_name)
    cache.batch_repeat_interleave(rows)
    rest = decoder(input_ids=inputs[:, shared:], use_cache=True, **{cache_name: cache}).last_hidden_state
    # Positions before S - 1 predict shared targets: one row's log-probabilities, expanded.
    # Position S - 1 reads the shared prefix but predicts each row's own first token after it.
    marks = None if entropy_at is None else entropy_at[:, : shared - 1]
    common, common_entropy = _head_logprobs(
        head, prefix.last_hidden_state[:, : shared - 1], targets[:1, : shared - 1],
        None if marks is None else marks.any(0, keepdim=True), chunk_tokens, temperature,
    )  # fmt: skip  # (1, S - 1) each
    last = prefix.last_hidden_state[:, shared - 1 :].expand(rows, 1, -1)  # (B, 1, H)
    own, own_entropy = _head_logprobs(
        head, torch.cat([last, rest], dim=1), targets[:, shared - 1 :],
        None if entropy_at is None else entropy_at[:, shared - 1 :], chunk_tokens, temperature,
    )  # fmt: skip  # (B, T - S + 1) each
    logprobs = torch.cat([common.expand(rows, -1), own], dim=1)  # (B, T)
    if marks is None or common_entropy is None or own_entropy is None:
        return logprobs, None
    entropy = torch.cat([common_entropy.expand(rows, -1) * marks.bool(), own_entropy], dim=1)  # (B, T)
    return logprobs, entropy


def _head_logprobs(
    head: torch.nn.Module,
    hidden: torch.Tensor,
    targets: torch.Tensor,
    entropy_at: torch.Tensor | None,
    chunk_tokens: int,
    temperature: float,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The output head and log-softmax over `hidden` (B, T, H), a chunk of positions at a time."""
    positions = max(1, chunk_tokens // hidden.shape[0])
    recompute = torch.is_grad_enabled() and hidden.shape[1] > positions
    logprobs, entropies = [], []
    for start in range(0, hidden.shape[1], positions):
        span = slice(start, start + positions)
        where = None if entropy_at is None else entropy_at[:, span].bool()  # (B, c)
        if recompute:
            chosen, entropy = checkpoint(
                _chunk, head, hidden[:, span], targets[:, span], where, temperature, use_reentrant=False
            )
        else:
            chosen, entropy = _chunk(head, hidden[:, span], targets[:, span], where, temperature)
        logprobs.append(chosen)
        entropies.append(entropy)
    entropy = None if entropy_at is None else torch.cat(entropies, dim=1)  # (B, T)
    return torch.cat(logprobs, dim=1), entropy  # (B, T)


def _chunk(
    head: torch.nn.Module,
    hidden: torch.Tensor,
    targets: torch.Tensor,
    where: torch.Tensor | None,
    temperature: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    logits = head(hidden).float()  # (B, c, V)
    if temperature != 1.0:
        logits = logits / temperature
    logp = torch.log_softmax(logits, dim=-1)  # (B, c, V)
    chosen = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (B, c)
    entropy = torch.zeros_like(chosen)  # (B, c)
    if where is not None:
        with torch.no_grad():
            marked = logp.detach()[where]  # (N, V) only the marked positions
            entropy[where] = -(marked.exp() * marked).sum(-1)
    return chosen, entropy


def split_model(model: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.Module]:
    """(decoder, output head) of a causal LM, looking through a peft wrapper."""
    base = base_model(model)
    config = base.config
    for name in UNSUPPORTED_LOGIT_TRANSFORMS:
        if getattr(config, name, None):
            raise ValueError(
                f"{type(base).__name__} transforms its logits ({name}); the learner's chunked "
                "log-probabilities assume logits = output_head(hidden) and cannot train it"
            )
    decoder, head = base.get_decoder(), base.get_output_embeddings()
    if decoder is None or head is None:
        raise ValueError(f"{type(base).__name__} is not a causal LM with a decoder and an output head")
    return decoder, head
