"""Synthetic families about files and directories: create, append to, copy, move and find files.

Each family is a function of a seeded random source that returns a Draft (synthetic_drafts.py);
synthetic_curriculum.py puts them in curriculum order.
"""

from __future__ import annotations

import random

from learner.tasks.synthetic_drafts import (
    DIRS,
    OUTPUTS,
    STEMS,
    WORDS,
    Draft,
    absent,
    all_of,
    draw_dir_with_file,
    draw_lines_with,
    draw_names,
    draw_phrases,
    file_text,
    text_is,
)


def create_file(rng: random.Random) -> Draft:
    name, word = draw_names(rng, STEMS, 1)[0], rng.choice(WORDS)
    return Draft(
        f"Create the file {name} containing the word {word}.",
        {},
        text_is(name, [word]),
        f"echo {word} > {name}",
    )


def append_line(rng: random.Random) -> Draft:
    name, word = draw_names(rng, STEMS, 1)[0], rng.choice(WORDS)
    lines = draw_phrases(rng, rng.randint(2, 4))
    return Draft(
        f"Append the line {word} to the file {name}.",
        {name: file_text(lines)},
        text_is(name, [*lines, word]),
        f"echo {word} >> {name}",
    )


def copy_file(rng: random.Random) -> Draft:
    source, target = draw_names(rng, STEMS, 2)
    lines = draw_phrases(rng, rng.randint(2, 4))
    return Draft(
        f"Copy the file {source} to {target}.",
        {source: file_text(lines)},
        all_of(text_is(source, lines), text_is(target, lines)),
        f"cp {source} {target}",
    )


def rename_file(rng: random.Random) -> Draft:
    source, target = draw_names(rng, STEMS, 2)
    lines = draw_phrases(rng, rng.randint(2, 4))
    return Draft(
        f"Move the file {source} to {target}.",
        {source: file_text(lines)},
        all_of(absent(source), text_is(target, lines)),
        f"mv {source} {target}",
    )


def move_into_dir(rng: random.Random) -> Draft:
    name = draw_names(rng, STEMS, 1)[0]
    directory, files = draw_dir_with_file(rng, name)
    lines = draw_phrases(rng, rng.randint(2, 3))
    return Draft(
        f"Move the file {name} into the directory {directory}.",
        {name: file_text(lines), **files},
        all_of(absent(name), text_is(f"{directory}/{name}", lines)),
        f"mv {name} {directory}/",
    )


def copy_into_dir(rng: random.Random) -> Draft:
    name = draw_names(rng, STEMS, 1)[0]
    directory, files = draw_dir_with_file(rng, name)
    lines = draw_phrases(rng, rng.randint(2, 3))
    return Draft(
        f"Copy the file {name} into the directory {directory}.",
        {name: file_text(lines), **files},
        all_of(text_is(name, lines), text_is(f"{directory}/{name}", lines)),
        f"cp {name} {directory}/",
    )


def create_in_dir(rng: random.Random) -> Draft:
    name, word = draw_names(rng, STEMS, 1)[0], rng.choice(WORDS)
    directory, files = draw_dir_with_file(rng, name)
    return Draft(
        f"Create the file {directory}/{name} containing the word {word}.",
        files,
        text_is(f"{directory}/{name}", [word]),
        f"echo {word} > {directory}/{name}",
    )


def append_in_dir(rng: random.Random) -> Draft:
    name, word = draw_names(rng, STEMS, 1)[0], rng.choice(WORDS)
    directory, files = draw_dir_with_file(rng, name)
    lines = draw_phrases(rng, rng.randint(2, 4))
    path = f"{directory}/{name}"
    return Draft(
        f"Append the line {word} to the file {path}.",
        {**files, path: file_text(lines)},
        text_is(path, [*lines, word]),
        f"echo {word} >> {path}",
    )


def find_file(rng: random.Random) -> Draft:
    directory, out = rng.choice(DIRS), draw_names(rng, OUTPUTS, 1)[0]
    word = rng.choice(WORDS)
    names = draw_names(rng, STEMS, rng.randint(3, 5))
    others = [w for w in WORDS if w != word]
    files = {f"{directory}/{name}": file_text(draw_phrases(rng, 2, others)) for name in names}
    found = rng.choice(names)
    files[f"{directory}/{found}"] = file_text(draw_lines_with(rng, word, 2, 1))
    answers = (f"{directory}/{found}", found, f"./{directory}/{found}")
    answer = f"$(cat {out} 2>/dev/null | tr -d ' \\t\\n')"
    return Draft(
        f"Write the name of the file in {directory} that contains the word {word} to {out}.",
        files,
        f'case "{answer}" in {"|".join(answers)}) true;; *) false;; esac',
        f"grep -l {word} {directory}/* > {out}",
    )
