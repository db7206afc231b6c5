"""The synthetic task families: one small generator each, drawing names, words and numbers
from a seeded random source.

A family is a task shape ("write the number of lines in F to O") with a reference that is one
short shell command and a verifier that compares the workspace with values computed here, in
Python, never with what the attempt left behind (an attempt that rewrites an input file cannot
fool it). Verifiers ignore trailing newlines and, for numbers, surrounding blanks; otherwise they
are exact. Names and words are made of [a-z0-9._,/-] (the lowercase families capitalise
their input files' words), so nothing in a command needs quoting (expected lines
are single-quoted in verifiers for their spaces).

Difficulty: 1 = one short command (15-32 characters) of a common idiom; 2 = one command with a
flag or pattern to get right; 3 = a pipeline or a small awk program. Held-out defaults (see
synthetic.py) recombine pieces the training families teach.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

WORDS = (
    "amber apple basil bread cedar chair cloud daisy dream eagle ember fjord flame glade grape "
    "hazel honey igloo ivory jelly koala lemon lilac llama mango maple night ocean olive pearl "
    "pepper piano quilt radio river robot rocket silver stone sugar tiger tulip vapor violet "
    "walnut wheat yacht zebra"
).split()
# Names of at most five letters keep an easy task's command near 30 characters.
STEMS = "notes data log items names words list input draft todo books songs tools pets menu".split()
OUTPUTS = "out count total final saved new res ans".split()
DIRS = "docs inbox box stash vault shelf files old".split()


@dataclass(frozen=True)
class Draft:
    """What a family generates; synthetic.py makes it a Task."""

    instruction: str
    files: dict[str, str]
    verifier: str
    reference: str


@dataclass(frozen=True)
class Family:
    name: str
    difficulty: int
    make: Callable[[random.Random], Draft]


# -- verifier pieces ---------------------------------------------------------------------------


def text_is(path: str, lines: Sequence[str]) -> str:
    """A check that `path` holds exactly `lines` (trailing newlines aside)."""
    quoted = " ".join(f"'{line}'" for line in lines)
    expected = lines[0] if len(lines) == 1 else f"$(printf '%s\\n' {quoted})"
    return f'[ "$(cat {path} 2>/dev/null)" = "{expected}" ]'


def number_is(path: str, number: int) -> str:
    """A check that `path` holds `number` and nothing else but blanks."""
    return f'[ "$(cat {path} 2>/dev/null | tr -d \' \\t\\n\')" = "{number}" ]'


def absent(path: str) -> str:
    return f"[ ! -e {path} ]"


def all_of(*checks: str) -> str:
    return " && ".join(checks)


def file_text(lines: Sequence[str]) -> str:
    return "".join(line + "\n" for line in lines)


# -- drawing values ----------------------------------------------------------------------------


def _names(rng: random.Random, pool: Sequence[str], count: int, suffix: str = ".txt") -> list[str]:
    return [name + suffix for name in rng.sample(list(pool), count)]


def _input_and_output(rng: random.Random) -> tuple[str, str]:
    return _names(rng, STEMS, 1)[0], _names(rng, OUTPUTS, 1)[0]


def _phrases(rng: random.Random, count: int, words: Sequence[str] = WORDS, most: int = 3) -> list[str]:
    """`count` lines of 1..`most` words each."""
    return [" ".join(rng.sample(list(words), rng.randint(1, most))) for _ in range(count)]


def _lines_with(
    rng: random.Random, word: str, count: int, hits: int, exclude: Sequence[str] = ()
) -> list[str]:
    """`count` lines, exactly `hits` of which contain `word` (once), none any of `exclude`."""
    others = [w for w in WORDS if w != word and w not in exclude]
    lines = _phrases(rng, count, others, most=2)
    for index in rng.sample(range(count), hits):
        words = lines[index].split()
        words.insert(rng.randint(0, len(words)), word)
        lines[index] = " ".join(words)
    return lines


def _unsorted_words(rng: random.Random) -> list[str]:
    """4-8 distinct words, not already in sorted order."""
    lines = rng.sample(WORDS, rng.randint(4, 8))
    while lines == sorted(lines):
        rng.shuffle(lines)
    return lines


def _lines_and_count(rng: random.Random) -> tuple[list[str], int]:
    """6-10 lines of a word or two, and how many of the first to take (2-4)."""
    return _phrases(rng, rng.randint(6, 10), most=2), rng.randint(2, 4)


def _dir_with_file(rng: random.Random, avoid: str) -> tuple[str, dict[str, str]]:
    directory = rng.choice(DIRS)
    inside = next(n for n in _names(rng, STEMS, 2) if n != avoid)
    return directory, {f"{directory}/{inside}": file_text(_phrases(rng, 2))}


# -- the families ------------------------------------------------------------------------------


def create_file(rng: random.Random) -> Draft:
    name, word = _names(rng, STEMS, 1)[0], rng.choice(WORDS)
    return Draft(
        f"Create the file {name} containing the word {word}.",
        {},
        text_is(name, [word]),
        f"echo {word} > {name}",
    )


def append_line(rng: random.Random) -> Draft:
    name, word = _names(rng, STEMS, 1)[0], rng.choice(WORDS)
    lines = _phrases(rng, rng.randint(2, 4))
    return Draft(
        f"Append the line {word} to the file {name}.",
        {name: file_text(lines)},
        text_is(name, [*lines, word]),
        f"echo {word} >> {name}",
    )


def copy_file(rng: random.Random) -> Draft:
    source, target = _names(rng, STEMS, 2)
    lines = _phrases(rng, rng.randint(2, 4))
    return Draft(
        f"Copy the file {source} to {target}.",
        {source: file_text(lines)},
        all_of(text_is(source, lines), text_is(target, lines)),
        f"cp {source} {target}",
    )


def rename_file(rng: random.Random) -> Draft:
    source, target = _names(rng, STEMS, 2)
    lines = _phrases(rng, rng.randint(2, 4))
    return Draft(
        f"Move the file {source} to {target}.",
        {source: file_text(lines)},
        all_of(absent(source), text_is(target, lines)),
        f"mv {source} {target}",
    )


def move_into_dir(rng: random.Random) -> Draft:
    name = _names(rng, STEMS, 1)[0]
    directory, files = _dir_with_file(rng, name)
    lines = _phrases(rng, rng.randint(2, 3))
    return Draft(
        f"Move the file {name} into the directory {directory}.",
        {name: file_text(lines), **files},
        all_of(absent(name), text_is(f"{directory}/{name}", lines)),
        f"mv {name} {directory}/",
    )


def copy_into_dir(rng: random.Random) -> Draft:
    name = _names(rng, STEMS, 1)[0]
    directory, files = _dir_with_file(rng, name)
    lines = _phrases(rng, rng.randint(2, 3))
    return Draft(
        f"Copy the file {name} into the directory {directory}.",
        {name: file_text(lines), **files},
        all_of(text_is(name, lines), text_is(f"{directory}/{name}", lines)),
        f"cp {name} {directory}/",
    )


def create_in_dir(rng: random.Random) -> Draft:
    name, word = _names(rng, STEMS, 1)[0], rng.choice(WORDS)
    directory, files = _dir_with_file(rng, name)
    return Draft(
        f"Create the file {directory}/{name} containing the word {word}.",
        files,
        text_is(f"{directory}/{name}", [word]),
        f"echo {word} > {directory}/{name}",
    )


def append_in_dir(rng: random.Random) -> Draft:
    name, word = _names(rng, STEMS, 1)[0], rng.choice(WORDS)
    directory, files = _dir_with_file(rng, name)
    lines = _phrases(rng, rng.randint(2, 4))
    path = f"{directory}/{name}"
    return Draft(
        f"Append the line {word} to the file {path}.",
        {**files, path: file_text(lines)},
        text_is(path, [*lines, word]),
        f"echo {word} >> {path}",
    )


def count_lines(rng: random.Random) -> Draft:
    source, out = _input_and_output(rng)
    lines = _phrases(rng, rng.randint(3, 12))
    return Draft(
        f"Write the number of lines in {source} to {out}.",
        {source: file_text(lines)},
        number_is(out, len(lines)),
        f"wc -l < {source} > {out}",
    )


def count_words(rng: random.Random) -> Draft:
    source, out = _input_and_output(rng)
    lines = _phrases(rng, rng.randint(2, 6), most=4)
    while sum(len(line.split()) for line in lines) == len(lines):  # `wc -l` must not pass
        lines = _phrases(rng, len(lines), most=4)
    return Draft(
        f"Write the number of words in {source} to {out}.",
        {source: file_text(lines)},
        number_is(out, sum(len(line.split()) for line in lines)),
        f"wc -w < {source} > {out}",
    )


def sort_lines(rng: random.Random) -> Draft:
    source, out = _input_and_output(rng)
    lines = _unsorted_words(rng)
    return Draft(
        f"Write the lines of {source} in sorted order to {out}.",
        {source: file_text(lines)},
        text_is(out, sorted(lines)),
        f"sort {source} > {out}",
    )


def head_lines(rng: random.Random) -> Draft:
    source, out = _input_and_output(rng)
    lines, count = _lines_and_count(rng)
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
    existing = _phrases(rng, rng.randint(1, 2), most=2)
    return Draft(
        f"Append {what} to {out}.",
        {source: file_text(source_lines), out: file_text(existing)},
        text_is(out, [*existing, *result]),
        f"{command} >> {out}",
    )


def sort_append(rng: random.Random) -> Draft:
    source, out = _input_and_output(rng)
    lines = _unsorted_words(rng)
    return _appended(
        rng, f"the lines of {source} in sorted order", source, lines, out, sorted(lines), f"sort {source}"
    )


def head_append(rng: random.Random) -> Draft:
    source, out = _input_and_output(rng)
    lines, count = _lines_and_count(rng)
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
    source, out = _input_and_output(rng)
    lines = _phrases(rng, rng.randint(2, 4))
    upper = [line.upper() for line in lines]
    return _appended(
        rng, f"the text of {source} in uppercase", source, lines, out, upper, f"tr a-z A-Z < {source}"
    )


def count_lines_append(rng: random.Random) -> Draft:
    source, out = _input_and_output(rng)
    lines = _phrases(rng, rng.randint(3, 12))
    return _appended(
        rng, f"the number of lines in {source}", source, lines, out, [str(len(lines))], f"wc -l < {source}"
    )


def count_words_append(rng: random.Random) -> Draft:
    source, out = _input_and_output(rng)
    lines = _phrases(rng, rng.randint(2, 6), most=4)
    while sum(len(line.split()) for line in lines) == len(lines):  # `wc -l` must not pass
        lines = _phrases(rng, len(lines), most=4)
    words = sum(len(line.split()) for line in lines)
    return _appended(
        rng, f"the number of words in {source}", source, lines, out, [str(words)], f"wc -w < {source}"
    )


def uppercase(rng: random.Random) -> Draft:
    source, out = _input_and_output(rng)
    lines = _phrases(rng, rng.randint(2, 4))
    return Draft(
        f"Write the text of {source} in uppercase to {out}.",
        {source: file_text(lines)},
        text_is(out, [line.upper() for line in lines]),
        f"tr a-z A-Z < {source} > {out}",
    )


def _capitalised_phrases(rng: random.Random) -> list[str]:
    """2-4 lines whose words are each in capitals or capitalised, so lowercasing changes every one."""
    lines = _phrases(rng, rng.randint(2, 4))
    return [
        " ".join(w.upper() if rng.random() < 0.5 else w.capitalize() for w in line.split()) for line in lines
    ]


def lowercase(rng: random.Random) -> Draft:
    source, out = _input_and_output(rng)
    lines = _capitalised_phrases(rng)
    return Draft(
        f"Write the text of {source} in lowercase to {out}.",
        {source: file_text(lines)},
        text_is(out, [line.lower() for line in lines]),
        f"tr A-Z a-z < {source} > {out}",
    )


def lowercase_append(rng: random.Random) -> Draft:
    source, out = _input_and_output(rng)
    lines = _capitalised_phrases(rng)
    lower = [line.lower() for line in lines]
    return _appended(
        rng, f"the text of {source} in lowercase", source, lines, out, lower, f"tr A-Z a-z < {source}"
    )


def grep_lines(rng: random.Random) -> Draft:
    source, out = _input_and_output(rng)
    word, count = rng.choice(WORDS), rng.randint(5, 9)
    lines = _lines_with(rng, word, count, rng.randint(1, count - 2))
    return Draft(
        f"Write the lines of {source} that contain the word {word} to {out}.",
        {source: file_text(lines)},
        text_is(out, [line for line in lines if word in line.split()]),
        f"grep {word} {source} > {out}",
    )


def count_matches(rng: random.Random) -> Draft:
    source, out = _input_and_output(rng)
    word, count = rng.choice(WORDS), rng.randint(5, 9)
    hits = rng.randint(1, count - 2)
    return Draft(
        f"Write the number of lines in {source} that contain the word {word} to {out}.",
        {source: file_text(_lines_with(rng, word, count, hits))},
        number_is(out, hits),
        f"grep -c {word} {source} > {out}",
    )


def dedupe_lines(rng: random.Random) -> Draft:
    source, out = _input_and_output(rng)
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
    source, out = _input_and_output(rng)
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
    source = _names(rng, STEMS, 1, suffix=".csv")[0]
    out = _names(rng, OUTPUTS, 1)[0]
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
    return _lines_with(rng, old, count, rng.randint(1, count), exclude=[new]), old, new


def _replaced(lines: list[str], old: str, new: str) -> list[str]:
    return [" ".join(new if w == old else w for w in line.split()) for line in lines]


def replace_word(rng: random.Random) -> Draft:
    name = _names(rng, STEMS, 1)[0]
    lines, old, new = _replacement(rng)
    return Draft(
        f"In the file {name}, replace every {old} with {new}.",
        {name: file_text(lines)},
        text_is(name, _replaced(lines, old, new)),
        f"sed -i 's/{old}/{new}/g' {name}",
    )


def replace_to_file(rng: random.Random) -> Draft:
    source, out = _input_and_output(rng)
    lines, old, new = _replacement(rng)
    return Draft(
        f"Write the text of {source} with every {old} replaced by {new} to {out}.",
        {source: file_text(lines)},
        text_is(out, _replaced(lines, old, new)),
        f"sed 's/{old}/{new}/g' {source} > {out}",
    )


def find_file(rng: random.Random) -> Draft:
    directory, out = rng.choice(DIRS), _names(rng, OUTPUTS, 1)[0]
    word = rng.choice(WORDS)
    names = _names(rng, STEMS, rng.randint(3, 5))
    others = [w for w in WORDS if w != word]
    files = {f"{directory}/{name}": file_text(_phrases(rng, 2, others)) for name in names}
    found = rng.choice(names)
    files[f"{directory}/{found}"] = file_text(_lines_with(rng, word, 2, 1))
    answers = (f"{directory}/{found}", found, f"./{directory}/{found}")
    answer = f"$(cat {out} 2>/dev/null | tr -d ' \\t\\n')"
    return Draft(
        f"Write the name of the file in {directory} that contains the word {word} to {out}.",
        files,
        f'case "{answer}" in {"|".join(answers)}) true;; *) false;; esac',
        f"grep -l {word} {directory}/* > {out}",
    )


def sum_numbers(rng: random.Random) -> Draft:
    source, out = _input_and_output(rng)
    numbers = [rng.randint(1, 99) for _ in range(rng.randint(3, 7))]
    return Draft(
        f"Write the sum of the numbers in {source} (one per line) to {out}.",
        {source: file_text([str(n) for n in numbers])},
        number_is(out, sum(numbers)),
        f"awk '{{s+=$1}} END {{print s}}' {source} > {out}",
    )


# In curriculum order: easy first. The default held-out families (synthetic.py) are marked.
FAMILIES: tuple[Family, ...] = (
    Family("create_file", 1, create_file),
    Family("append_line", 1, append_line),
    Family("copy_file", 1, copy_file),
    Family("rename_file", 1, rename_file),
    Family("move_into_dir", 1, move_into_dir),
    Family("append_in_dir", 1, append_in_dir),
    Family("count_lines", 1, count_lines),
    Family("count_words", 1, count_words),
    Family("sort_lines", 1, sort_lines),
    Family("head_lines", 1, head_lines),
    Family("copy_into_dir", 1, copy_into_dir),  # held out: copy_file + move_into_dir
    Family("create_in_dir", 1, create_in_dir),  # held out: create_file + a directory
    Family("sort_append", 1, sort_append),
    Family("head_append", 1, head_append),
    Family("count_lines_append", 1, count_lines_append),
    Family("count_words_append", 1, count_words_append),  # a grid's missing cell: count_words + appending
    Family("uppercase", 2, uppercase),
    Family("uppercase_append", 2, uppercase_append),  # a grid's missing cell: uppercase + appending
    Family("lowercase", 2, lowercase),
    Family("lowercase_append", 2, lowercase_append),
    Family("grep_lines", 2, grep_lines),
    Family("dedupe_lines", 2, dedupe_lines),
    Family("extract_column", 2, extract_column),
    Family("replace_word", 2, replace_word),
    Family("find_file", 2, find_file),
    Family("count_matches", 2, count_matches),  # held out: grep_lines + count_lines
    Family("replace_to_file", 2, replace_to_file),  # held out: replace_word + redirection
    Family("sum_numbers", 3, sum_numbers),
    Family("count_unique", 3, count_unique),  # held out: dedupe_lines + count_lines
)
