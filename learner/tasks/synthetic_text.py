"""Synthetic families about a file's text: count, sort, take, change case, filter, replace, sum.

Most write their result to a new file; the `_append` variants add it after the lines an output
file already holds. Each family is a function of a seeded random source that returns a Draft
(synthetic_drafts.py); synthetic_curriculum.py puts them in curriculum order.
"""

from __future__ import annotations

import random

from learner.tasks.synthetic_drafts import (
    OUTPUTS,
    STEMS,
    WORDS,
    Draft,
    draw_input_and_output,
    draw_lines_and_count,
    draw_lines_with,
    draw_names,
    draw_phrases,
    draw_unsorted_words,
    file_text,
    number_is,
    text_is,
)


def count_lines(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    lines = draw_phrases(rng, rng.randint(3, 12))
    return Draft(
        f"Write the number of lines in {source} to {out}.",
        {source: file_text(lines)},
        number_is(out, len(lines)),
        f"wc -l < {source} > {out}",
    )


def count_words(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    lines = draw_phrases(rng, rng.randint(2, 6), most=4)
    while sum(len(line.split()) for line in lines) == len(lines):  # `wc -l` must not pass
        lines = draw_phrases(rng, len(lines), most=4)
    return Draft(
        f"Write the number of words in {source} to {out}.",
        {source: file_text(lines)},
        number_is(out, sum(len(line.split()) for line in lines)),
        f"wc -w < {source} > {out}",
    )


def sort_lines(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    lines = draw_unsorted_words(rng)
    return Draft(
        f"Write the lines of {source} in sorted order to {out}.",
        {source: file_text(lines)},
        text_is(out, sorted(lines)),
        f"sort {source} > {out}",
    )


def head_lines(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    lines, count = draw_lines_and_count(rng)
    return Draft(
        f"Write the first {count} lines of {source} to {out}.",
        {source: file_text(lines)},
        text_is(out, lines[:count]),
        f"head -n {count} {source} > {out}",
    )


def _appended(
    rng: random.Random,
    what: str,
    source: str,
    source_lines: list[str],
    out: str,
    result: list[str],
    command: str,
) -> Draft:
    """The append variant of a write-to-a-file family: `out` already holds a line or two and
    the result goes after them (`command >> out`)."""
    existing = draw_phrases(rng, rng.randint(1, 2), most=2)
    return Draft(
        f"Append {what} to {out}.",
        {source: file_text(source_lines), out: file_text(existing)},
        text_is(out, [*existing, *result]),
        f"{command} >> {out}",
    )


def sort_append(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    lines = draw_unsorted_words(rng)
    return _appended(
        rng, f"the lines of {source} in sorted order", source, lines, out, sorted(lines), f"sort {source}"
    )


def head_append(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    lines, count = draw_lines_and_count(rng)
    return _appended(
        rng,
        f"the first {count} lines of {source}",
        source,
        lines,
        out,
        lines[:count],
        f"head -n {count} {source}",
    )


def uppercase_append(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    lines = draw_phrases(rng, rng.randint(2, 4))
    upper = [line.upper() for line in lines]
    return _appended(
        rng, f"the text of {source} in uppercase", source, lines, out, upper, f"tr a-z A-Z < {source}"
    )


def count_lines_append(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    lines = draw_phrases(rng, rng.randint(3, 12))
    return _appended(
        rng, f"the number of lines in {source}", source, lines, out, [str(len(lines))], f"wc -l < {source}"
    )


def count_words_append(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    lines = draw_phrases(rng, rng.randint(2, 6), most=4)
    while sum(len(line.split()) for line in lines) == len(lines):  # `wc -l` must not pass
        lines = draw_phrases(rng, len(lines), most=4)
    words = sum(len(line.split()) for line in lines)
    return _appended(
        rng, f"the number of words in {source}", source, lines, out, [str(words)], f"wc -w < {source}"
    )


def uppercase(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    lines = draw_phrases(rng, rng.randint(2, 4))
    return Draft(
        f"Write the text of {source} in uppercase to {out}.",
        {source: file_text(lines)},
        text_is(out, [line.upper() for line in lines]),
        f"tr a-z A-Z < {source} > {out}",
    )


def _capitalised_phrases(rng: random.Random) -> list[str]:
    """2-4 lines whose words are each in capitals or capitalised, so lowercasing changes every one."""
    lines = draw_phrases(rng, rng.randint(2, 4))
    return [
        " ".join(w.upper() if rng.random() < 0.5 else w.capitalize() for w in line.split()) for line in lines
    ]


def lowercase(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    lines = _capitalised_phrases(rng)
    return Draft(
        f"Write the text of {source} in lowercase to {out}.",
        {source: file_text(lines)},
        text_is(out, [line.lower() for line in lines]),
        f"tr A-Z a-z < {source} > {out}",
    )


def lowercase_append(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    lines = _capitalised_phrases(rng)
    lower = [line.lower() for line in lines]
    return _appended(
        rng, f"the text of {source} in lowercase", source, lines, out, lower, f"tr A-Z a-z < {source}"
    )


def grep_lines(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    word, count = rng.choice(WORDS), rng.randint(5, 9)
    lines = draw_lines_with(rng, word, count, rng.randint(1, count - 2))
    return Draft(
        f"Write the lines of {source} that contain the word {word} to {out}.",
        {source: file_text(lines)},
        text_is(out, [line for line in lines if word in line.split()]),
        f"grep {word} {source} > {out}",
    )


def count_matches(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    word, count = rng.choice(WORDS), rng.randint(5, 9)
    hits = rng.randint(1, count - 2)
    return Draft(
        f"Write the number of lines in {source} that contain the word {word} to {out}.",
        {source: file_text(draw_lines_with(rng, word, count, hits))},
        number_is(out, hits),
        f"grep -c {word} {source} > {out}",
    )


def dedupe_lines(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    pool = rng.sample(WORDS, rng.randint(2, 4))
    lines = [rng.choice(pool) for _ in range(rng.randint(5, 9))]
    while len(set(lines)) == len(lines) or lines == sorted(set(lines)):
        lines = [rng.choice(pool) for _ in range(len(lines))]
    return Draft(
        f"Write the lines of {source} sorted and without duplicates to {out}.",
        {source: file_text(lines)},
        text_is(out, sorted(set(lines))),
        f"sort -u {source} > {out}",
    )


def count_unique(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    pool = rng.sample(WORDS, rng.randint(2, 5))
    lines = [rng.choice(pool) for _ in range(rng.randint(5, 10))]
    while len(set(lines)) == len(lines):
        lines = [rng.choice(pool) for _ in range(len(lines))]
    return Draft(
        f"Write the number of distinct lines in {source} to {out}.",
        {source: file_text(lines)},
        number_is(out, len(set(lines))),
        f"sort -u {source} | wc -l > {out}",
    )


def extract_column(rng: random.Random) -> Draft:
    source = draw_names(rng, STEMS, 1, suffix=".csv")[0]
    out = draw_names(rng, OUTPUTS, 1)[0]
    rows = [
        [rng.choice(WORDS), str(rng.randint(1, 999)), rng.choice(WORDS)] for _ in range(rng.randint(3, 6))
    ]
    column = rng.randint(1, 3)
    return Draft(
        f"Write column {column} of the comma-separated file {source} to {out}.",
        {source: file_text([",".join(row) for row in rows])},
        text_is(out, [row[column - 1] for row in rows]),
        f"cut -d, -f{column} {source} > {out}",
    )


def _replacement(rng: random.Random) -> tuple[list[str], str, str]:
    """Lines where `old` occurs at least once, and a `new` word that occurs nowhere."""
    old, new = rng.sample(WORDS, 2)
    count = rng.randint(3, 5)
    return draw_lines_with(rng, old, count, rng.randint(1, count), exclude=[new]), old, new


def _replaced(lines: list[str], old: str, new: str) -> list[str]:
    return [" ".join(new if w == old else w for w in line.split()) for line in lines]


def replace_word(rng: random.Random) -> Draft:
    name = draw_names(rng, STEMS, 1)[0]
    lines, old, new = _replacement(rng)
    return Draft(
        f"In the file {name}, replace every {old} with {new}.",
        {name: file_text(lines)},
        text_is(name, _replaced(lines, old, new)),
        f"sed -i 's/{old}/{new}/g' {name}",
    )


def replace_to_file(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    lines, old, new = _replacement(rng)
    return Draft(
        f"Write the text of {source} with every {old} replaced by {new} to {out}.",
        {source: file_text(lines)},
        text_is(out, _replaced(lines, old, new)),
        f"sed 's/{old}/{new}/g' {source} > {out}",
    )


def sum_numbers(rng: random.Random) -> Draft:
    source, out = draw_input_and_output(rng)
    numbers = [rng.randint(1, 99) for _ in range(rng.randint(3, 7))]
    return Draft(
        f"Write the sum of the numbers in {source} (one per line) to {out}.",
        {source: file_text([str(n) for n in numbers])},
        number_is(out, sum(numbers)),
        f"awk '{{s+=$1}} END {{print s}}' {source} > {out}",
    )
