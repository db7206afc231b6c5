"""What a synthetic family generates, and the pieces families build it from.

    Draft, Family                    a generated task before synthetic.py makes it a Task
    WORDS, STEMS, OUTPUTS, DIRS      the vocabulary of names and words
    text_is, number_is, absent, all_of, file_text   verifier checks and file contents
    draw_*                           seeded draws of names, lines and directories

A verifier compares the workspace with values computed here, in Python, never with what the
attempt left behind (an attempt that rewrites an input file cannot fool it). Verifiers ignore
trailing newlines and, for numbers, surrounding blanks; otherwise they are exact. Names and words
are made of [a-z0-9._,/-] (the lowercase families capitalise their input files' words), so
nothing in a command needs quoting (expected lines are single-quoted in verifiers for their
spaces).
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


def draw_names(rng: random.Random, pool: Sequence[str], count: int, suffix: str = ".txt") -> list[str]:
    return [name + suffix for name in rng.sample(list(pool), count)]


def draw_input_and_output(rng: random.Random) -> tuple[str, str]:
    return draw_names(rng, STEMS, 1)[0], draw_names(rng, OUTPUTS, 1)[0]


def draw_phrases(rng: random.Random, count: int, words: Sequence[str] = WORDS, most: int = 3) -> list[str]:
    """`count` lines of 1..`most` words each."""
    return [" ".join(rng.sample(list(words), rng.randint(1, most))) for _ in range(count)]


def draw_lines_with(
    rng: random.Random, word: str, count: int, hits: int, exclude: Sequence[str] = ()
) -> list[str]:
    """`count` lines, exactly `hits` of which contain `word` (once), none any of `exclude`."""
    others = [w for w in WORDS if w != word and w not in exclude]
    lines = draw_phrases(rng, count, others, most=2)
    for index in rng.sample(range(count), hits):
        words = lines[index].split()
        words.insert(rng.randint(0, len(words)), word)
        lines[index] = " ".join(words)
    return lines


def draw_unsorted_words(rng: random.Random) -> list[str]:
    """4-8 distinct words, not already in sorted order."""
    lines = rng.sample(WORDS, rng.randint(4, 8))
    while lines == sorted(lines):
        rng.shuffle(lines)
    return lines


def draw_lines_and_count(rng: random.Random) -> tuple[list[str], int]:
    """6-10 lines of a word or two, and how many of the first to take (2-4)."""
    return draw_phrases(rng, rng.randint(6, 10), most=2), rng.randint(2, 4)


def draw_dir_with_file(rng: random.Random, avoid: str) -> tuple[str, dict[str, str]]:
    """A directory from DIRS and the one file in it (not named `avoid`), as workspace files."""
    directory = rng.choice(DIRS)
    inside = next(n for n in draw_names(rng, STEMS, 2) if n != avoid)
    return directory, {f"{directory}/{inside}": file_text(draw_phrases(rng, 2))}
