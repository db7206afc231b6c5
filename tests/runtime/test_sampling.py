"""runtime/executor/sampling.py: batched sampling across prompts, per-row seeds, exact logprobs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from runtime.executor import LocalModel, SamplingParams, build_tiny_model
from runtime.executor.action_grammar import is_action_prefix, is_whole_action
from runtime.executor.actions import parse_action
from runtime.executor.sampling import choose_tokens, row_uniforms, sample_batch, shared_prompt

TASKS = ["Create a.txt containing x.", "List the files.", "Count the lines of notes.md and print the number."]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> LocalModel:
    torch.set_num_threads(1)
    return LocalModel.load(build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0))


@pytest.fixture(scope="module")
def prompts(model: LocalModel) -> list[list[int]]:
    encoded = [model.tokenizer.encode_chat([{"role": "user", "content": task}]) for task in TASKS]
    assert len({len(p) for p in encoded}) == len(encoded)  # the batch needs padding
    return encoded


@pytest.mark.parametrize(
    "sampling",
    [SamplingParams(temperature=1.0, max_tokens=24), SamplingParams(temperature=0.0, max_tokens=24),
     SamplingParams(temperature=0.7, top_p=0.8, max_tokens=24)],
    ids=["t1", "greedy", "t0.7-top-p"],
)  # fmt: skip
def test_a_batch_of_different_prompts_equals_each_row_sampled_alone(
    model: LocalModel, prompts: list[list[int]], sampling: SamplingParams
) -> None:
    rows = [prompts[i % len(prompts)] for i in range(6)]  # each prompt twice, different seeds
    seeds = [11, 12, 13, 14, 15, 16]
    batch = model.sample_batch(rows, sampling, seeds)
    alone = [
        model.sample(p, SamplingParams(sampling.temperature, sampling.top_p, sampling.max_tokens, s))
        for p, s in zip(rows, seeds)
    ]
    assert [b.ids for b in batch] == [a.ids for a in alone]
    assert [b.finish_reason for b in batch] == [a.finish_reason for a in alone]
    for b, a in zip(batch, alone, strict=True):
        assert max(abs(x - y) for x, y in zip(b.logprobs, a.logprobs, strict=True)) < 1e-5
    if sampling.temperature > 0:
        assert batch[0].ids != batch[3].ids  # same prompt, different seed: different draws


def test_prompts_that_begin_alike_run_their_beginning_once_and_sample_as_alone(model: LocalModel) -> None:
    system = {
        "role": "system",
        "content": "You do terminal work in a Linux workspace. Reply with one JSON action.",
    }
    rows = [model.tokenizer.encode_chat([system, {"role": "user", "content": task}]) for task in TASKS]
    shared = shared_prompt(rows)
    assert shared >= 16 and len({len(row) for row in rows}) == len(rows)  # shared, then padded
    assert all(row[:shared] == rows[0][:shared] for row in rows)
    assert shared_prompt(rows[:1]) == 0 and shared_prompt([rows[0], rows[0]]) == len(rows[0]) - 1
    sampling = SamplingParams(temperature=1.0, max_tokens=24)
    seeds = [21, 22, 23]
    batch = model.sample_batch(rows, sampling, seeds)
    alone = [model.sample(row, replace(sampling, seed=seed)) for row, seed in zip(rows, seeds, strict=True)]
    assert [b.ids for b in batch] == [a.ids for a in alone]
    for b, a in zip(batch, alone, strict=True):
        assert max(abs(x - y) for x, y in zip(b.logprobs, a.logprobs, strict=True)) < 1e-5


def test_logprobs_are_the_raw_model_logprobs_of_the_sampled_ids(
    model: LocalModel, prompts: list[list[int]]
) -> None:
    """Before temperature and top-p (sampling.py's convention), as a fresh forward pass gives them."""
    batch = model.sample_batch(prompts, SamplingParams(temperature=1.6, top_p=0.9, max_tokens=24), [1, 2, 3])
    for prompt, sampled in zip(prompts, batch, strict=True):
        assert len(sampled.ids) == len(sampled.logprobs) > 0
        recomputed = model.logprobs_of(prompt, sampled.ids)
        assert max(abs(a - b) for a, b in zip(recomputed, sampled.logprobs, strict=True)) < 1e-4


def test_greedy_picks_the_likeliest_token_at_every_position(
    model: LocalModel, prompts: list[list[int]]
) -> None:
    batch = model.sample_batch(prompts, SamplingParams(temperature=0.0, max_tokens=12), [0, 0, 0])
    for prompt, sampled in zip(prompts, batch, strict=True):
        sequence = torch.tensor([prompt + sampled.ids])
        with torch.no_grad():
            logits = model._base(input_ids=sequence).logits[0]  # (P + C, V)
        predicted = logits[len(prompt) - 1 : -1].argmax(-1).tolist()
        assert predicted == sampled.ids


def test_rows_end_on_their_own_stop_token_or_length_and_the_others_go_on(
    model: LocalModel, prompts: list[list[int]]
) -> None:
    free = model.sample_batch(prompts[:2], SamplingParams(temperature=1.0, max_tokens=10), [3, 4])
    stop = next(t for t in free[0].ids[1:] if t not in free[1].ids)  # only row 0 samples it
    rows = sample_batch(
        model._base, prompts[:2], [3, 4], temperature=1.0, top_p=1.0, max_tokens=[10, 4],
        stop_ids={stop}, device=model.device,
    )  # fmt: skip
    cut = free[0].ids.index(stop) + 1
    assert cut < 10
    assert rows[0].ids == free[0].ids[:cut] and rows[0].finish_reason == "stop"
    assert rows[0].logprobs == pytest.approx(free[0].logprobs[:cut], abs=1e-5)
    assert rows[1].ids == free[1].ids[:4] and rows[1].finish_reason == "length"


def test_top_logprobs_come_per_kept_position_likeliest_first(
    model: LocalModel, prompts: list[list[int]]
) -> None:
    rows = sample_batch(
        model._base, prompts[:2], [5, 6], temperature=1.0, top_p=1.0, max_tokens=[6, 3],
        stop_ids=set(), device=model.device, top_logprobs=3,
    )  # fmt: skip
    assert [len(r.top) for r in rows] == [6, 3]
    for row in rows:
        for position, (token, logprob) in zip(row.top, zip(row.ids, row.logprobs, strict=True), strict=True):
            values = [value for _, value in position]
            assert len(position) == 3 and values == sorted(values, reverse=True)
            assert logprob <= values[0] + 1e-6
            assert token not in dict(position) or dict(position)[token] == pytest.approx(logprob, abs=1e-6)


def test_a_rows_uniforms_depend_only_on_its_seed() -> None:
    both = row_uniforms([5, 7], 10)  # (2, 10)
    assert torch.equal(both[0, :4], row_uniforms([5], 4)[0])  # the same stream, any length
    assert torch.equal(both[1], row_uniforms([7], 10)[0])  # whatever the batch
    assert not torch.equal(both[0], both[1])
    assert ((both >= 0) & (both < 1)).all()


def test_choose_tokens_inverts_the_tempered_and_cut_distribution() -> None:
    logits = torch.log(torch.tensor([[0.5, 0.0, 0.3, 0.2]]))  # token 1 has probability 0
    uniforms = torch.tensor([0.0, 0.49, 0.51, 0.79, 0.81, 1 - 2**-53], dtype=torch.float64)
    chosen = [int(choose_tokens(logits, 1.0, 1.0, u[None])[0]) for u in uniforms]
    assert chosen == [0, 0, 2, 2, 3, 3]  # CDF 0.5, 0.5, 0.8, 1.0, in vocabulary order
    cut = [int(choose_tokens(logits, 1.0, 0.6, u[None])[0]) for u in uniforms]
    assert set(cut) == {0, 2}  # top-p 0.6 keeps 0.5 + 0.3, never the 0.2 token
    assert int(choose_tokens(logits, 0.0, 1.0, None)[0]) == 0
    rows = choose_tokens(logits.repeat(3, 1), 1.0, 1.0, torch.tensor([0.1, 0.6, 0.9], dtype=torch.float64))
    assert rows.tolist() == [0, 2, 3]  # one vectorised call for the whole batch


def test_sample_batch_refuses_mismatched_seeds(model: LocalModel, prompts: list[list[int]]) -> None:
    from runtime.executor import ExecutorRequestError

    with pytest.raises(ExecutorRequestError, match="one seed per prompt"):
        model.sample_batch(prompts, SamplingParams(max_tokens=4), [1])


def test_each_row_is_cut_to_the_context_left_after_its_own_prompt(tmp_path: Path) -> None:
    small = LocalModel.load(build_tiny_model(tmp_path / "tiny", seed=1, max_positions=40))
    short = small.tokenizer.encode_chat([{"role": "user", "content": "hi"}])
    long = small.tokenizer.encode_chat([{"role": "user", "content": "a longer task with more words in it"}])
    assert len(long) > len(short)
    rows = sample_batch(
        small._base, [short, long], [1, 2], temperature=1.0, top_p=1.0,
        max_tokens=[40 - len(short), 40 - len(long)], stop_ids=set(), device=small.device,
    )  # fmt: skip
    assert [len(r.ids) for r in rows] == [40 - len(short), 40 - len(long)]
    alone = small.sample(long, SamplingParams(temperature=1.0, max_tokens=100, seed=2))
    assert alone.ids == rows[1].ids  # the same cut, alone or beside a shorter prompt


def test_constrained_completions_keep_to_the_action_format(
    model: LocalModel, prompts: list[list[int]]
) -> None:
    """An untrained model writes anything; constrained, every completion is an action that parses,
    closed in time to fit `max_tokens`, the same alone as in a batch, with raw logprobs."""
    sampling = SamplingParams(temperature=1.0, max_tokens=40, constrained=True)
    free = model.sample_batch(prompts, replace(sampling, constrained=False), [5, 6, 7])
    assert not any(is_action_prefix(model.tokenizer.decode(s.ids)) for s in free)
    batch = model.sample_batch(prompts, sampling, [5, 6, 7])
    for prompt, sampled in zip(prompts, batch, strict=True):
        text = model.tokenizer.decode(sampled.ids)
        assert sampled.finish_reason == "stop" and len(sampled.ids) <= 40
        assert is_whole_action(text) and parse_action(text).task_complete is not None
        recomputed = model.logprobs_of(prompt, sampled.ids)
        assert max(abs(a - b) for a, b in zip(recomputed, sampled.logprobs, strict=True)) < 1e-4
    alone = model.sample(prompts[1], replace(sampling, seed=6))
    assert alone.ids == batch[1].ids


def test_constrained_greedy_takes_the_likeliest_allowed_token(
    model: LocalModel, prompts: list[list[int]]
) -> None:
    sampled = model.sample(prompts[0], SamplingParams(temperature=0.0, max_tokens=10, constrained=True))
    constraint = model._action_constraint()
    with torch.no_grad():
        logits = model._base(input_ids=torch.tensor([prompts[0] + sampled.ids])).logits[0]  # (P + C, V)
    text = ""
    for position, token in enumerate(sampled.ids):
        allowed = constraint.allowed(text)
        row = logits[len(prompts[0]) - 1 + position]
        assert token == allowed[int(row[allowed].argmax())]
        text += constraint.pieces[token]


def test_the_allowed_tokens_listed_at_once_are_those_allowed_one_by_one(model: LocalModel) -> None:
    constraint = model._action_constraint()
    action = '{"analysis": "Copy it.", "commands": [{"keystrokes": " cp a.txt b/\\n", "timeout": 10}], "task_complete": true}'
    for end in [*range(0, len(action), 5), len(action)]:
        text = action[:end]
        assert constraint.allowed(text) == [
            t for t in range(len(constraint.pieces)) if constraint.allows(text, t)
        ], text


def test_a_reply_wandering_in_a_string_closes_just_in_time(
    model: LocalModel, prompts: list[list[int]]
) -> None:
    """A row writes freely until its budget comes within `ending_bound`, then closes its action:
    a tight budget still gives a whole action, and a longer one the same start, then more."""
    constraint = model._action_constraint()
    free_steps = 16
    tight, short, long = (
        model.sample(prompts[2], SamplingParams(temperature=1.0, max_tokens=limit, constrained=True, seed=3))
        for limit in (constraint.ending_length("") + 4, constraint.ending_bound + free_steps, 64)
    )
    for sampled, limit in (
        (tight, constraint.ending_length("") + 4),
        (short, constraint.ending_bound + free_steps),
    ):
        assert sampled.finish_reason == "stop" and len(sampled.ids) <= limit
        assert is_whole_action(model.tokenizer.decode(sampled.ids))
    assert len(short.ids) < len(long.ids) <= 64
    assert short.ids[:free_steps] == long.ids[:free_steps]
    too_short = model.sample(
        prompts[2], SamplingParams(temperature=1.0, max_tokens=3, constrained=True, seed=3)
    )
    assert too_short.finish_reason == "length"  # no action fits in 3 tokens: nothing to close


def test_token_bytes_concatenate_to_the_text_even_where_a_token_splits_a_character(model: LocalModel) -> None:
    """The constraint reads tokens as bytes: a byte-level token that holds half of "é" is that
    half (its text would read U+FFFD), and a text's tokens' bytes are the text's UTF-8."""
    tokenizer = model.tokenizer
    text = "cp café.txt naïve/ && echo 日本"
    ids = tokenizer.encode_text(text)
    assert b"".join(tokenizer.token_bytes(t) for t in ids) == text.encode()
    split = [t for t in ids if "\ufffd" in tokenizer.token_text(t)]
    assert split  # the tiny tokenizer has no merge for these characters
    assert all(b"\xef\xbf\xbd" not in tokenizer.token_bytes(t) for t in split)
