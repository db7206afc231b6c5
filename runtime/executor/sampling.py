"""Sampling tokens from a causal LM one at a time, and the log-probabilities the learner trains on.

The logprob convention (every backend, and `temper serve executor`, follows it):

    completion_logprobs[i] = log_softmax(logits_i)[completion_ids[i]]

the log-probability under the model's own distribution, before temperature and top-p. This is
what vLLM returns by default (`logprobs_mode="raw_logprobs"`), so a record from vLLM and one from
the in-process model mean the same thing, and the learner recomputes it from stored ids with a
plain teacher-forced forward pass (`teacher_forced_logprobs`). At temperature 1 and top-p 1 (how
the learner replays tasks) it is also exactly the sampling distribution's log-probability; at
other settings the learner knows the settings from `Completion.sampling`.

Sampling itself: temperature 0 is greedy; otherwise the logits are divided by the temperature, cut
to the smallest set of tokens whose probability reaches `top_p` (the most likely token always
stays), and one token is drawn with the given `torch.Generator`, so a seed fixes the draw.
A completion stops after a stop token (kept in the ids, with its logprob) or after `max_tokens`.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class SampledTokens:
    ids: list[int]
    logprobs: list[float]  # raw model log-probabilities of `ids`, see the module docstring
    finish_reason: str  # "stop" (a stop token was sampled) or "length"
    top: list[list[tuple[int, float]]]  # per position, the `top_logprobs` likeliest (id, logprob)


@torch.inference_mode()
def sample_tokens(
    model: torch.nn.Module,
    prompt_ids: Sequence[int],
    *,
    temperature: float,
    top_p: float,
    max_tokens: int,
    stop_ids: Collection[int],
    generator: torch.Generator,
    top_logprobs: int = 0,
) -> SampledTokens:
    """Sample up to `max_tokens` tokens after `prompt_ids`, reusing the key-value cache."""
    device = generator.device
    cache_name, prompt_extra = _forward_arguments(model)
    prompt = torch.tensor([list(prompt_ids)], device=device)  # (1, P)
    output = model(input_ids=prompt, use_cache=True, **prompt_extra)
    ids: list[int] = []
    logprobs: list[float] = []
    top: list[list[tuple[int, float]]] = []
    while len(ids) < max_tokens:
        logits = output.logits[0, -1].float()  # (V,)
        token = choose_token(logits, temperature, top_p, generator)
        raw = torch.log_softmax(logits, dim=-1)  # (V,)
        ids.append(token)
        logprobs.append(raw[token].item())
        if top_logprobs:
            values, indices = torch.topk(raw, min(top_logprobs, raw.numel()))  # (K,), (K,)
            top.append(list(zip(indices.tolist(), values.tolist(), strict=True)))
        if token in stop_ids:
            return SampledTokens(ids, logprobs, "stop", top)
        if len(ids) < max_tokens:
            next_input = torch.tensor([[token]], device=device)  # (1, 1)
            cache = {cache_name: getattr(output, cache_name)}
            output = model(input_ids=next_input, use_cache=True, **cache)
    return SampledTokens(ids, logprobs, "length", top)


def choose_token(
    logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator
) -> int:
    """One token id from `logits` (V,): greedy at temperature 0, else temperature and top-p."""
    if temperature <= 0:
        return int(torch.argmax(logits).item())
    probs = torch.softmax(logits / temperature, dim=-1)  # (V,)
    if top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True)  # (V,), (V,)
        before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs  # (V,) mass above each token
        sorted_probs[before >= top_p] = 0.0  # keeps the first token, whose `before` is 0
        probs = torch.zeros_like(probs).scatter_(0, order, sorted_probs)  # (V,)
    return int(torch.multinomial(probs, 1, generator=generator).item())


@torch.inference_mode()
def teacher_forced_logprobs(
    model: torch.nn.Module,
    prompt_ids: Sequence[int],
    completion_ids: Sequence[int],
    device: torch.device,
) -> list[float]:
    """The raw model log-probability of each of `completion_ids` after `prompt_ids` and the
    completion tokens before it: one forward pass over the whole sequence."""
    if not completion_ids:
        return []
    sequence = torch.tensor([[*prompt_ids, *completion_ids]], device=device)  # (1, P + C)
    logits = model(input_ids=sequence).logits[0].float()  # (P + C, V)
    start = len(prompt_ids) - 1
    predicting = logits[start : start + len(completion_ids)]  # (C, V) each predicts the next id
    targets = torch.tensor(list(completion_ids), device=device)  # (C,)
    chosen = torch.log_softmax(predicting, dim=-1).gather(1, targets[:, None])  # (C, 1)
    return chosen[:, 0].tolist()


def _forward_arguments(model: torch.nn.Module) -> tuple[str, dict[str, int]]:
    """The key-value cache's argument name (`cache` from transformers 5.2x, `past_key_values`
    before), and `logits_to_keep=1` where supported: the prompt pass needs only the last
    position's logits, not (P, V) of them."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    parameters = inspect.signature(base.forward).parameters
    cache_name = "cache" if "cache" in parameters else "past_key_values"
    return cache_name, ({"logits_to_keep": 1} if "logits_to_keep" in parameters else {})


@torch.inference_mode()
def sample_group(
    model: torch.nn.Module,
    prompt_ids: Sequence[int],
    generators: Sequence[torch.Generator],
    *,
    temperature: float,
    top_p: float,
    max_tokens: int,
    stop_ids: Collection[int],
) -> list[SampledTokens]:
    """`len(generators)` completions of one prompt, sampled as one batch (a GRPO group).

    Row i draws with `generators[i]` exactly as `sample_tokens` would, so a seed gives the same
    completion alone or in a group (up to floating-point differences of batched matrix products).
    The prompt is encoded once and its key-value cache repeated for the rows; a row that sampled
    a stop token keeps being fed a token whose outputs are ignored, so the batch stays rectangular.
    """
    rows = len(generators)
    device = generators[0].device
    cache_name, prompt_extra = _forward_arguments(model)
    prompt = torch.tensor([list(prompt_ids)] * rows, device=device)  # (N, P)
    output = model(input_ids=prompt, use_cache=True, **prompt_extra)
    ids: list[list[int]] = [[] for _ in range(rows)]
    logprobs: list[list[float]] = [[] for _ in range(rows)]
    finished = [False] * rows
    step = 0
    while step < max_tokens and not all(finished):
        logits = output.logits[:, -1].float()  # (N, V)
        raw = torch.log_softmax(logits, dim=-1)  # (N, V)
        tokens = []
        for row in range(rows):
            if finished[row]:
                tokens.append(ids[row][-1])  # fed again, outputs ignored
                continue
            token = choose_token(logits[row], temperature, top_p, generators[row])
            ids[row].append(token)
            logprobs[row].append(raw[row, token].item())
            finished[row] = token in stop_ids
            tokens.append(token)
        step += 1
        if step < max_tokens and not all(finished):
            next_input = torch.tensor(tokens, device=device)[:, None]  # (N, 1)
            output = model(input_ids=next_input, use_cache=True, **{cache_name: getattr(output, cache_name)})
    return [
        SampledTokens(ids[row], logprobs[row], "stop" if finished[row] else "length", [])
        for row in range(rows)
    ]
