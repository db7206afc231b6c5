"""Sampling completions from a causal LM, many prompts in one batch, and the log-probabilities
the learner trains on.

The logprob convention (every backend, and `temper serve executor`, follows it):

    completion_logprobs[i] = log_softmax(logits_i)[completion_ids[i]]

the log-probability under the model's own distribution, before temperature and top-p. This is
what vLLM returns by default (`logprobs_mode="raw_logprobs"`), so a record from vLLM and one from
the in-process model mean the same thing, and the learner recomputes it from stored ids with a
plain teacher-forced forward pass (`teacher_forced_logprobs`). At temperature 1 and top-p 1 (how
the learner replays tasks) it is also exactly the sampling distribution's log-probability; at
other settings the learner knows the settings from `Completion.sampling`.

Sampling: temperature 0 is greedy; otherwise the logits are divided by the temperature, cut to
the smallest set of tokens whose probability reaches `top_p` (the most likely token always
stays), and one token is drawn by inverting the cumulative distribution (in vocabulary order) at
a uniform number u in [0, 1). A completion stops after a stop token (kept in the ids, with its
logprob) or after its `max_tokens`.

Seeds: every row has its own seed, and row i's u at position t is element t of
`torch.rand(n, dtype=float64)` from a CPU generator seeded with it (`row_uniforms`). So the same
seed and prompt give the same completion whether the row is sampled alone, in a GRPO group or in
a batch with other prompts, on CPU or GPU (up to floating-point differences of batched matrix
products, which flip a draw only when u falls within ~1e-6 of a boundary). One shared generator
would have made a row's draws depend on its batch; a generator per row drawing per token would
have forced a Python loop over rows at every step. Drawing each row's u's up front does neither.

Constrained sampling (`constraint`, an `action_grammar.ActionConstraint`): each row walks the
format's automaton, one state per row. A row's token that would leave the format is set aside
and the row draws again at the same u from what is left, up to `_REDRAWS` times; then from the
distribution restricted to every token the format allows (`ActionConstraint.allowed_after`).
Either way the draw is from the model's distribution restricted to the allowed tokens and
renormalised, a function of the row's own seed as before. The recorded logprobs stay raw
(unrestricted) ones; a trained model almost always samples an allowed token first, so the two
differ on few tokens. A row also closes its action in time: once its token budget (`max_tokens`
less what it wrote) comes within `ActionConstraint.ending_bound`, a token after which the
closing (the shortest ending in the fewest tokens, then a stop token) no longer fits is replaced
by that closing, so a reply that wanders inside a long string still parses (as a wrong command)
instead of being cut at `max_tokens`.

Batching: prompts are left-padded to one width, with an attention mask and position ids that
start at each row's first real token, and decoded together with the key-value cache. The tokens
all prompts begin with (the system prompt; all of a GRPO group's prompt) run once, on one row,
and their keys and values are repeated for every row: the padding then goes between that common
beginning and each row's own tokens, masked out the same way. On a replay of 16 tasks x 8
attempts this is most of the prompt pass. Ids and logprobs go into preallocated (N, T) tensors;
a finished row keeps being fed (its outputs are ignored) so the batch stays rectangular, and the
loop ends when every row has finished.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from memory import common_prefix_of
from runtime.executor.action_grammar import ActionConstraint
from runtime.executor.kv_cache import growing_cache

_REDRAWS = 8  # set-aside draws of a row before its allowed tokens are listed in full
_MIN_SHARED = 8  # common prompt tokens worth a forward pass of their own


@dataclass(frozen=True)
class SampledTokens:
    ids: list[int]
    logprobs: list[float]  # raw model log-probabilities of `ids`, see the module docstring
    finish_reason: str  # "stop" (a stop token was sampled) or "length"
    top: list[list[tuple[int, float]]]  # per position, the `top_logprobs` likeliest (id, logprob)


@torch.inference_mode()
def sample_batch(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    seeds: Sequence[int],
    *,
    temperature: float,
    top_p: float,
    max_tokens: Sequence[int],
    stop_ids: Collection[int],
    device: torch.device,
    top_logprobs: int = 0,
    constraint: ActionConstraint | None = None,
) -> list[SampledTokens]:
    """One completion per (prompt, seed, max_tokens) row, all decoded as one batch; with a
    `constraint`, each row's completion keeps to the action format (module docstring)."""
    rows = len(prompts)
    limits = torch.tensor(list(max_tokens), device=device)  # (N,)
    steps = int(limits.max())
    uniforms = row_uniforms(seeds, steps if temperature > 0 else 0).to(device)  # (N, T)
    stops = torch.tensor(sorted(stop_ids), device=device, dtype=torch.long)  # (S,)
    shared = shared_prompt(prompts)
    input_ids, mask, lengths = _left_pad(prompts, steps, device, shared)  # (N, W), (N, W + T), (N,)
    width = input_ids.shape[1]
    padded = bool((lengths < width).any())

    cache_name, prompt_extra = _forward_arguments(model)
    extra: dict[str, Any] = {}
    cache: dict[str, Any] = {cache_name: growing_cache()}  # grows in place, not by a copy a token
    if padded:  # an unpadded batch runs exactly like a single prompt: no mask, default positions
        positions = (mask[:, :width].cumsum(-1) - 1).clamp(min=0)  # (N, W)
        extra = {"attention_mask": mask[:, :width], "position_ids": positions[:, shared:]}
    if shared:  # the common beginning once, its keys and values repeated for every row
        prefix = model(input_ids=input_ids[:1, :shared], use_cache=True, **cache, **prompt_extra)
        common = getattr(prefix, cache_name)
        common.batch_repeat_interleave(rows)
        cache = {cache_name: common}
    output = model(input_ids=input_ids[:, shared:], use_cache=True, **cache, **prompt_extra, **extra)

    ids = torch.zeros(rows, steps, dtype=torch.long, device=device)  # (N, T)
    logprobs = torch.zeros(rows, steps, device=device)  # (N, T)
    top_logprobs = min(top_logprobs, output.logits.shape[-1])  # K
    top_values = torch.zeros(rows, steps, top_logprobs, device=device)  # (N, T, K)
    top_ids = torch.zeros(rows, steps, top_logprobs, dtype=torch.long, device=device)  # (N, T, K)
    produced = torch.zeros(rows, dtype=torch.long, device=device)  # (N,) tokens kept per row
    stopped = torch.zeros(rows, dtype=torch.bool, device=device)  # (N,) ended on a stop token
    finished = torch.zeros(rows, dtype=torch.bool, device=device)  # (N,)
    states: list[int | None] = [None if constraint is None else constraint.start] * rows  # in the format
    endings: list[list[int]] = [[] for _ in range(rows)]  # tokens a row closing its action has left
    for step in range(steps):
        logits = output.logits[:, -1].float()  # (N, V)
        raw = torch.log_softmax(logits, dim=-1)  # (N, V)
        step_uniforms = uniforms[:, step] if temperature > 0 else None
        tokens = choose_tokens(logits, temperature, top_p, step_uniforms)
        if constraint is not None:
            budgets = (limits - produced).tolist()  # tokens each row may still write, this one included
            tokens = _keep_to(
                constraint,
                states,
                endings,
                budgets,
                tokens,
                logits,
                finished,
                temperature,
                top_p,
                step_uniforms,
            )
        ids[:, step] = tokens
        logprobs[:, step] = raw.gather(1, tokens[:, None])[:, 0]
        if top_logprobs:
            top_values[:, step], top_ids[:, step] = torch.topk(raw, top_logprobs)
        running = ~finished
        produced += running
        stopped |= running & torch.isin(tokens, stops)
        finished |= stopped | (produced >= limits)
        if step + 1 == steps or bool(finished.all()):
            break
        if padded:  # a finished row's position stops growing: it stays inside the context
            position = torch.minimum(lengths + step, lengths + limits - 1)[:, None]  # (N, 1)
            extra = {"attention_mask": mask[:, : width + step + 1], "position_ids": position}
        cache = {cache_name: getattr(output, cache_name)}
        output = model(input_ids=tokens[:, None], use_cache=True, **cache, **extra)

    counts, ids_rows, logprob_rows = produced.tolist(), ids.tolist(), logprobs.tolist()
    tops = _top_lists(top_ids, top_values, counts) if top_logprobs else [[] for _ in counts]
    return [
        SampledTokens(
            ids_rows[row][:count], logprob_rows[row][:count], "stop" if is_stop else "length", tops[row]
        )
        for row, (count, is_stop) in enumerate(zip(counts, stopped.tolist(), strict=True))
    ]


def _keep_to(
    constraint: ActionConstraint,
    states: list[int | None],
    endings: list[list[int]],
    budgets: list[int],
    tokens: torch.Tensor,
    logits: torch.Tensor,
    finished: torch.Tensor,
    temperature: float,
    top_p: float,
    uniforms: torch.Tensor | None,
) -> torch.Tensor:
    """`tokens` (N,) with each running row's token replaced, where the constraint refuses it, by
    a draw from that row's allowed tokens, or by the next token of the row's closing once the row
    must close its action to fit its budget; `states` advance by the tokens kept."""
    chosen, done = tokens.tolist(), finished.tolist()
    for row, token in enumerate(chosen):
        if done[row]:
            continue
        state = states[row]
        if endings[row]:
            token = endings[row].pop(0)
        else:
            if constraint.advance(state, token) is None:
                row_uniform = None if uniforms is None else uniforms[row : row + 1]
                token = _redraw(
                    constraint, state, token, logits[row : row + 1], temperature, top_p, row_uniform
                )
            near_the_end = budgets[row] <= constraint.ending_bound
            if near_the_end and not _still_closes(constraint, state, token, budgets[row]):
                closing = constraint.closing(state)
                if closing is not None and len(closing) <= budgets[row]:
                    token, endings[row] = closing[0], closing[1:]
        chosen[row] = token
        states[row] = constraint.advance(state, token)
    return torch.tensor(chosen, dtype=tokens.dtype, device=tokens.device)


def _still_closes(constraint: ActionConstraint, state: int | None, token: int, budget: int) -> bool:
    """Whether, after `token`, the action can still close within the `budget - 1` tokens left."""
    if token in constraint.stop_ids:
        return True
    needed = constraint.closing_length(constraint.advance(state, token))
    return needed is not None and needed <= budget - 1


def _redraw(
    constraint: ActionConstraint,
    state: int | None,
    refused: int,
    logits: torch.Tensor,
    temperature: float,
    top_p: float,
    uniform: torch.Tensor | None,
) -> int:
    """A token for one row (`logits` (1, V)) that the constraint allows in `state`."""
    logits = logits.clone()
    for _ in range(_REDRAWS):
        logits[0, refused] = -torch.inf
        refused = int(choose_tokens(logits, temperature, top_p, uniform)[0])
        if constraint.advance(state, refused) is not None:
            return refused
    allowed = constraint.allowed_after(state)
    if not allowed:  # nothing can follow (the tokenizer lacks a character the format needs)
        return min(constraint.stop_ids, default=refused)
    only = torch.full_like(logits, -torch.inf)
    index = torch.tensor(allowed, device=logits.device)
    only[0, index] = logits[0, index]
    return int(choose_tokens(only, temperature, top_p, uniform)[0])


def shared_prompt(prompts: Sequence[Sequence[int]]) -> int:
    """How many leading tokens every prompt has in common (the system prompt, a group's whole
    prompt), to run once for all rows: 0 for a single prompt, and each row keeps at least its
    last prompt token, whose logits start its completion."""
    if len(prompts) < 2:
        return 0
    common = common_prefix_of([list(prompt) for prompt in prompts])
    shared = min(common, min(len(prompt) for prompt in prompts) - 1)
    return shared if shared >= _MIN_SHARED else 0


def _left_pad(
    prompts: Sequence[Sequence[int]], steps: int, device: torch.device, shared: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The prompts padded with id 0 to one width (N, W), the attention mask for them and `steps`
    more tokens (N, W + steps), and the prompt lengths (N,). The padding goes after the first
    `shared` tokens (0: at the very left), so the rows' common beginning stays aligned."""
    lengths = torch.tensor([len(p) for p in prompts], device=device)  # (N,)
    width = int(lengths.max())
    padded = [
        list(prompt[:shared]) + [0] * (width - len(prompt)) + list(prompt[shared:]) for prompt in prompts
    ]
    input_ids = torch.tensor(padded, dtype=torch.long, device=device)  # (N, W)
    mask = torch.ones(len(prompts), width + steps, dtype=torch.long, device=device)  # (N, W + T)
    mask[:, shared:width] = torch.arange(width - shared, device=device) >= (width - lengths)[:, None]
    return input_ids, mask, lengths


def _top_lists(
    ids: torch.Tensor, values: torch.Tensor, counts: list[int]
) -> list[list[list[tuple[int, float]]]]:
    """Per row, per kept position, the (id, logprob) alternatives from (N, T, K) tensors."""
    return [
        [list(zip(i, v, strict=True)) for i, v in zip(row_ids[:count], row_values[:count], strict=True)]
        for row_ids, row_values, count in zip(ids.tolist(), values.tolist(), counts, strict=True)
    ]


def row_uniforms(seeds: Sequence[int], count: int) -> torch.Tensor:
    """(N, count) float64 uniforms in [0, 1): row i is the start of seed i's own stream (the
    same prefix for any `count`), drawn on the CPU so that it does not depend on the device."""
    uniforms = torch.empty(len(seeds), count, dtype=torch.float64)
    generator = torch.Generator()
    for row, seed in enumerate(seeds):
        generator.manual_seed(seed)
        uniforms[row] = torch.rand(count, generator=generator, dtype=torch.float64)
    return uniforms


def choose_tokens(
    logits: torch.Tensor, temperature: float, top_p: float, uniforms: torch.Tensor | None
) -> torch.Tensor:
    """One token id per row of `logits` (N, V): greedy at temperature 0 (`uniforms` unused), else
    the temperature and top-p distribution inverted at `uniforms` (N,)."""
    if temperature <= 0 or uniforms is None:
        return torch.argmax(logits, dim=-1)  # (N,)
    probs = torch.softmax(logits / temperature, dim=-1)  # (N, V)
    if top_p < 1.0:
        sorted_probs, order = torch.sort(probs, dim=-1, descending=True)  # (N, V), (N, V)
        before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs  # (N, V) mass above each token
        sorted_probs = sorted_probs.masked_fill(before >= top_p, 0.0)  # the first token stays
        probs = torch.zeros_like(probs).scatter_(-1, order, sorted_probs)  # (N, V)
    cdf = torch.cumsum(probs.double(), dim=-1)  # (N, V)
    total = cdf[:, -1:]  # (N, 1)
    # Strictly below the total, so the inversion lands on a token of positive probability.
    target = torch.minimum(uniforms[:, None] * total, torch.nextafter(total, torch.zeros_like(total)))
    return torch.searchsorted(cdf, target, right=True)[:, 0]  # (N,)


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
    """The key-value cache's argument name, and `logits_to_keep=1` where supported: the prompt
    pass needs only the last position's logits, not (P, V) of them."""
    base = base_model(model)
    parameters = inspect.signature(base.forward).parameters
    return cache_argument(base), ({"logits_to_keep": 1} if "logits_to_keep" in parameters else {})


def base_model(model: torch.nn.Module) -> Any:
    """The transformers model itself, looking through a peft wrapper (its methods are untyped)."""
    unwrap = getattr(model, "get_base_model", None)
    return model if unwrap is None else unwrap()


def cache_argument(module: torch.nn.Module) -> str:
    """The name under which `module.forward` takes a key-value cache: `cache` from transformers
    5.2x, `past_key_values` before."""
    return "cache" if "cache" in inspect.signature(module.forward).parameters else "past_key_values"
