"""Log-probabilities of target tokens under a causal LM, a chunk of positions at a time.

    logprobs, _ = token_logprobs(model, inputs, targets, chunk_tokens=1024)       # (B, T)
    logprobs, entropy = token_logprobs(model, inputs, targets, entropy_at=mask)    # (B, T) each
    logprobs, _ = token_logprobs(model, inputs, targets, temperature=1.3)           # log_softmax(logits / 1.3)

The full logits tensor (B, T, V) is never built: the decoder runs once over the whole sequence
(hidden states (B, T, H) are small), then the output head and the log-softmax run on chunks of
at most `chunk_tokens` positions, each gathering its targets' log-probabilities, so at most one
(B, c, V) chunk is alive at a time. With gradients on and more than one chunk, each chunk runs
under activation checkpointing: its logits are recomputed in the backward pass instead of being
kept, which trades one more output-head matmul for memory that no longer grows with T.

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

UNSUPPORTED_LOGIT_TRANSFORMS = ("final_logit_softcapping", "logit_scale")


def token_logprobs(
    model: torch.nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    *,
    chunk_tokens: int = 1024,
    entropy_at: torch.Tensor | None = None,
    temperature: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(log p(targets[b, t] | inputs[b, :t+1]), entropy where `entropy_at` (B, T) is nonzero, or
    None without it), both (B, T) float32; p is softmax(logits / temperature)."""
    if temperature <= 0:
        raise ValueError(f"temperature must be positive; got {temperature}")
    decoder, head = split_model(model)
    hidden = decoder(input_ids=inputs, use_cache=False).last_hidden_state  # (B, T, H)
    positions = max(1, chunk_tokens // inputs.shape[0])
    recompute = torch.is_grad_enabled() and inputs.shape[1] > positions
    logprobs, entropies = [], []
    for start in range(0, inputs.shape[1], positions):
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
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
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
