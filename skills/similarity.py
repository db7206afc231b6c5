"""How alike two skills are: the near-duplicate check behind "patch, don't create".

`similarity(a, b)` is a cosine between bag-of-words vectors of name + description + body, in
[0, 1]. Words are lowercased, crudely stemmed (plural and -ing/-ed endings dropped) and counted
sublinearly (1 + log tf); the name's and the description's words count HEAD_WEIGHT times, since
they say what the skill is for, while a body also holds generic steps. Words that every
procedure uses ("run", "file", "check", "use") are dropped with the stop words.

A create is turned into a patch when an existing skill scores at or above DUPLICATE_THRESHOLD.
The threshold was measured on bench/data/skills_duplicates.jsonl: pairs labelled duplicate (the
same procedure written twice, with other words and steps in another order) or distinct (skills
of the same domain doing different things, the hard case); `python bench/skills.py` prints its
accuracy there (docs/skills.md has the figures).
"""

from __future__ import annotations

import math
import re
from collections import Counter

HEAD_WEIGHT = 3.0
DUPLICATE_THRESHOLD = 0.5

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    """a an and are as at be by can do does for from how if in into is it its of on or so that the
    then this to use used using when where which while with you your will should must may not no
    run runs file files check step steps skill skills command commands make sure first next one two
    new get set all any each out up via also than them they these those what who why""".split()
)


def words(text: str) -> list[str]:
    return [_stem(word) for word in _WORD.findall(text.lower()) if word not in _STOP and len(word) > 1]


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def vector(name: str, description: str, body: str) -> dict[str, float]:
    head = Counter(words(name.replace("-", " ") + " " + description))
    rest = Counter(words(body))
    weights: dict[str, float] = {}
    for word, count in rest.items():
        weights[word] = 1.0 + math.log(count)
    for word, count in head.items():
        weights[word] = weights.get(word, 0.0) + HEAD_WEIGHT * (1.0 + math.log(count))
    return weights


def cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if not a or not b:
        return 0.0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    dot = sum(weight * large.get(word, 0.0) for word, weight in small.items())
    norm = math.sqrt(sum(w * w for w in a.values())) * math.sqrt(sum(w * w for w in b.values()))
    return dot / norm if norm else 0.0


def similarity(a: tuple[str, str, str], b: tuple[str, str, str]) -> float:
    """How alike two skills given as (name, description, body) are, from 0 to 1."""
    return cosine(vector(*a), vector(*b))
