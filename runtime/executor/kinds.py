"""Kinds of terminal tasks: instructions grouped into clusters, so routing and the learner's
held-out results can speak of "this kind of task".

    kinds = TaskKinds(store)
    kinds.kind_of("Copy the file list.txt to names.txt.")   # 'copy the file <path> to <path>'
    kinds.kind_of("Copy the file todo.txt to pets.txt.")    # the same kind

The rule, deterministic and explainable:

1. **Mask** what varies between instances of one task: quoted strings become `<str>`, file names
   and paths (`notes.txt`, `stash/pets.txt`, `/var/log/x`) `<path>`, numbers `<num>`; the rest is
   lower-cased into words. The masked words, joined by spaces, are the instruction's *signature*.
2. **Compare** token sets: the signature's words and its adjacent word pairs (unigrams + bigrams,
   so word order counts a little), by Jaccard similarity |A & B| / |A | B|.
3. **Join or start**: the instruction joins the known kind whose first example is most similar,
   if that similarity is at least `JOIN_SIMILARITY` (ties: the older kind); else it starts a new
   kind, named by its own signature. A kind's name never changes once made.

Known kinds persist in memory's database (`store.routing`), oldest first, so the daemon labelling
live queries and the learner labelling held-out tasks (even in another process) agree; the result
depends on the order kinds were first seen, which the database keeps.

What it cannot see: words that vary between instances without looking like names (the word a
file should contain) count against similarity exactly like words that change the task (write vs
append). At 0.5, instances of each synthetic family land together, and families that differ by
one word share a kind (docs/executor.md lists them).
"""

from __future__ import annotations

import re

from memory import MemoryStore

JOIN_SIMILARITY = 0.5
MAX_SIGNATURE_CHARS = 300

_QUOTED = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`")
_PATH = re.compile(r"~?(?:[\w.-]*/)+[\w.-]*|\b[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b")
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)*\b")
_WORD = re.compile(r"<(?:str|path|num)>|[^\W\d_]+")


def signature(instruction: str) -> str:
    """The masked words of `instruction` (step 1 of the rule)."""
    text = _QUOTED.sub(" <str> ", instruction)
    text = _PATH.sub(" <path> ", text)
    text = _NUMBER.sub(" <num> ", text)
    return " ".join(_WORD.findall(text.lower()))[:MAX_SIGNATURE_CHARS]


def tokens(signature_text: str) -> frozenset[str]:
    """A signature's words and adjacent word pairs (step 2)."""
    words = signature_text.split()
    return frozenset(words) | frozenset(f"{a} {b}" for a, b in zip(words, words[1:], strict=False))


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 1.0


class TaskKinds:
    """`kind_of(instruction) -> kind name`, over the kinds stored in `store.routing`."""

    def __init__(self, store: MemoryStore, *, join_similarity: float = JOIN_SIMILARITY) -> None:
        self.store = store
        self.join_similarity = join_similarity
        self._known: list[tuple[str, frozenset[str]]] = []  # (name, tokens of its first example)
        self._last_id = 0

    def kind_of(self, instruction: str) -> str:
        """The kind `instruction` belongs to; a new kind is stored when none is similar enough."""
        self._refresh()
        own = signature(instruction)
        found = self._most_similar(tokens(own), self.join_similarity)
        if found is not None:
            return found
        self.store.routing.add_kind(own, instruction)
        self._refresh()
        return own

    def match(self, instruction: str, at_least: float) -> str | None:
        """The known kind `instruction` is at least `at_least` similar to (the most similar;
        ties: the older), or None; stores nothing (the direct route asks this of every message)."""
        self._refresh()
        return self._most_similar(tokens(signature(instruction)), at_least)

    def known(self) -> list[str]:
        """Every known kind's name, oldest first."""
        self._refresh()
        return [name for name, _ in self._known]

    def _most_similar(self, wanted: frozenset[str], at_least: float) -> str | None:
        best, best_score = None, at_least
        for name, example in self._known:
            score = similarity(wanted, example)
            if score > best_score or (best is None and score >= best_score):
                best, best_score = name, score
        return best

    def _refresh(self) -> None:
        """Pick up kinds stored since the last look (by this process or another)."""
        for kind_id, name, _example in self.store.routing.kinds(self._last_id):
            self._known.append((name, tokens(name)))  # a kind's name is its first example's signature
            self._last_id = kind_id
