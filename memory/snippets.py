"""Snippets: the words of a hit around its matches, the matches [marked].

FTS5's snippet() costs a query per hit (a MATCH restricted to one rowid re-reads each term's
posting list): about 0.15 ms a hit at 200,000 messages, more than the rest of a typical
search. The hit's text is already in hand, so `Snippets` cuts it in Python with the index's
own tokenizer (porter over unicode61, diacritics removed), which marks exactly the tokens the
index matched: "moved" marks "Moving", a phrase is marked as one span ("[billing service]"),
a prefix marks the words it starts.

The window is SNIPPET_TOKENS tokens long and chosen as FTS5 chooses it (fts5_aux.c): the most
different terms, then the most matches, a sentence start preferred; ellipses where text was
cut. Output matches snippet(messages_fts, 0, '[', ']', '…', 16) on the labelled set's hits.

`Overlap` is the other thing search.py reads from a candidate's tokens: how much of the
question it repeats (a tie-breaker for the shortlist).

Both are also SQL functions, so the query that reads a search's candidates computes them:

    temper_snippet(content, spec)       -- spec: Snippets.spec, the query's terms as stems
    temper_overlap(content, question)   -- question: the question's stems, space-separated

In C where memory._fts5_rank was built (`memory/_fts5_text.c`, the same results), else
`register` gives the connection the Python ones below, which are the reference.
"""

import re
from bisect import bisect_right
from collections.abc import Sequence
from functools import cached_property, lru_cache

import apsw

from .query import Term

SNIPPET_TOKENS = 16
_SENTENCE_END = re.compile(rb"[.:]\s+")
_TOKENIZER_ARGS = ["unicode61", "remove_diacritics", "2"]


class Snippets:
    """Cuts snippets for one query's terms."""

    def __init__(self, db: apsw.Connection, terms: Sequence[Term]) -> None:
        self._tokenize = db.fts5_tokenizer("porter", _TOKENIZER_ARGS)
        self._words: dict[str, int] = {}  # stem -> the term it belongs to
        self._prefixes: list[tuple[str, int]] = []
        self._phrases: list[tuple[list[str], int]] = []
        for number, term in enumerate(terms):
            stems = self._stems(term.text, apsw.FTS5_TOKENIZE_QUERY)
            if term.kind == "prefix" and stems:
                self._prefixes.append((stems[0], number))
            elif len(stems) == 1:
                self._words.setdefault(stems[0], number)
            elif stems:
                self._phrases.append((stems, number))

    @cached_property
    def spec(self) -> str:
        """The terms as temper_snippet reads them: a line a term, "w N stem" (a word),
        "p N stem" (a prefix) or "f N stem stem ..." (a phrase), N its number."""
        return "\n".join(
            [f"w {number} {stem}" for stem, number in self._words.items()]
            + [f"p {number} {stem}" for stem, number in self._prefixes]
            + [f"f {number} {' '.join(stems)}" for stems, number in self._phrases]
        )

    @classmethod
    def from_spec(cls, db: apsw.Connection, spec: str) -> "Snippets":
        snippets = cls(db, [])
        for line in spec.splitlines():
            kind, number, *stems = line.split(" ")
            if kind == "w" and stems:
                snippets._words.setdefault(stems[0], int(number))
            elif kind == "p" and stems:
                snippets._prefixes.append((stems[0], int(number)))
            elif kind == "f" and stems:
                snippets._phrases.append((stems, int(number)))
        return snippets

    def _stems(self, text: str, flags: int) -> list[str]:
        return self._tokenize(text.encode(), flags, None, include_offsets=False, include_colocated=False)

    def stems(self, text: str) -> list[str]:
        """`text`'s stems as the index stores them (what temper_overlap's question is)."""
        return self._stems(text, apsw.FTS5_TOKENIZE_DOCUMENT)

    def tokens(self, content: str) -> list[tuple[int, int, str]]:
        """`content`'s tokens as the index sees them: (start byte, end byte, stem)."""
        return self._tokenize(content.encode(), apsw.FTS5_TOKENIZE_DOCUMENT, None, include_colocated=False)

    def __call__(self, content: str) -> str | None:
        """`content` cut around its matches, or None when no term matches it."""
        data = content.encode()
        tokens = self.tokens(content)
        found = self._instances([token[2] for token in tokens])
        if not found:
            return None
        first = (
            0
            if len(tokens) <= SNIPPET_TOKENS
            else _window_start(found, _sentence_starts(data, tokens), len(tokens))
        )
        last = min(first + SNIPPET_TOKENS, len(tokens)) - 1
        pieces = [] if first == 0 else ["…"]
        position = 0 if first == 0 else tokens[first][0]
        for start, end in _merged(found):
            if start < first or start > last:
                continue
            begin, finish = tokens[start][0], tokens[min(end, last)][1]
            pieces += [
                data[position:begin].decode(errors="replace"),
                "[",
                data[begin:finish].decode(errors="replace"),
                "]",
            ]
            position = finish
        tail = len(data) if last == len(tokens) - 1 else tokens[last][1]
        pieces.append(data[position:tail].decode(errors="replace"))
        if last < len(tokens) - 1:
            pieces.append("…")
        return "".join(pieces)

    def _instances(self, stems: list[str]) -> list[tuple[int, int, int]]:
        """(first token, token count, term) of each match, in order (FTS5's xInst)."""
        if not self._prefixes and not self._phrases:  # words only: the common case, kept fast
            words = self._words
            return [(i, 1, words[stem]) for i, stem in enumerate(stems) if stem in words]
        found: list[tuple[int, int, int]] = []
        for i, stem in enumerate(stems):
            term = self._words.get(stem)
            if term is None and self._prefixes:
                term = next((number for prefix, number in self._prefixes if stem.startswith(prefix)), None)
            if term is not None:
                found.append((i, 1, term))
            for phrase, number in self._phrases:
                if stem == phrase[0] and stems[i : i + len(phrase)] == phrase:
                    found.append((i, len(phrase), number))
        return found


def _merged(found: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """The spans to mark: overlapping matches become one."""
    spans: list[tuple[int, int]] = []
    for start, size, _ in found:
        end = start + size - 1
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], end))
        else:
            spans.append((start, end))
    return spans


def _sentence_starts(data: bytes, tokens: list[tuple[int, int, str]]) -> list[int]:
    """Tokens that start a sentence: the first, and each right after a "." or ":" and
    whitespace (neither is ever part of a token, so the regex finds every such gap)."""
    starts = [0]
    if _SENTENCE_END.search(data) is None:
        return starts
    begins = {token[0]: i for i, token in enumerate(tokens)}
    for match in _SENTENCE_END.finditer(data):
        i = begins.get(match.end(), 0)
        if i > 0 and tokens[i - 1][1] <= match.start():
            starts.append(i)
    return starts


def _score(found: list[tuple[int, int, int]], start: int) -> tuple[int, int, int]:
    """FTS5's window score (1,000 for each term, 1 for each repeat), its first match and the
    end of its last."""
    seen: set[int] = set()
    score, first, last = 0, -1, -1
    for position, size, term in found:
        if start <= position < start + SNIPPET_TOKENS:
            score += 1 if term in seen else 1000
            seen.add(term)
            first = position if first < 0 else first
            last = position + size
    return score, first, last


def _halved(value: int) -> int:
    """`value` / 2 rounded towards zero, as C divides (FTS5 centres its window so: a phrase
    running past the window's end makes this negative)."""
    return value // 2 if value >= 0 else -(-value // 2)


def _window_start(found: list[tuple[int, int, int]], sentences: list[int], count: int) -> int:
    """Where the SNIPPET_TOKENS-token window starts, chosen as FTS5's snippet() chooses it:
    the best-scoring window around each match, centred on its matches, or starting at the
    sentence the match is in (a bonus of 100, 120 at the first token); ties go to the earliest.
    `sentences` ascending (the first is 0). A sentence holding several matches is scored once."""
    best_score, best_start = 0, 0
    sentence_scores: dict[int, int] = {}
    for position, _, _ in found:
        score, first, last = _score(found, position)
        if score > best_score:
            centred = first - _halved(SNIPPET_TOKENS - (last - first))
            best_score, best_start = score, max(0, min(centred, count - SNIPPET_TOKENS))
        sentence = sentences[bisect_right(sentences, position) - 1]
        if sentence < position:
            score = sentence_scores.get(sentence, -1)
            if score < 0:
                score = sentence_scores[sentence] = _score(found, sentence)[0] + (
                    120 if sentence == 0 else 100
                )
            if score > best_score:
                best_score, best_start = score, sentence
    return best_start


class Overlap:
    """How much of the question a text repeats: the share of its stemmed words and of its
    adjacent word pairs, stop words included.

    A tie-breaker for the shortlist, where BM25 has ignored stop words and word order:
    "what am I allergic to?" searches "allergic", and among the messages that say it,
    "I'm allergic to sesame" shares more of the question than "Mei is allergic to cats";
    "my brother's wedding" shares a pair with the question that "my brother gave a speech
    at the wedding" does not.
    """

    def __init__(self, question: list[str]) -> None:
        """`question`: the question's stems (Snippets.stems), as the index's tokenizer cuts them."""
        self._words = set(question)
        # A pair as text: stems never hold a space, so " a b " occurs in " w1 w2 ... " exactly
        # where a is followed by b (one substring search each, not a tuple per adjacent pair).
        self._pairs = {f" {first} {second} " for first, second in zip(question, question[1:])}

    def __call__(self, words: list[str]) -> float:
        """The share for a text whose stems are `words`."""
        if not self._words:
            return 0.0
        score = len(self._words.intersection(words)) / len(self._words)
        if self._pairs:
            text = " " + " ".join(words) + " "
            score += sum(pair in text for pair in self._pairs) / len(self._pairs)
        return score


def register(connection: apsw.Connection) -> None:
    """Give `connection` the Python temper_snippet and temper_overlap (where the C ones were
    not loaded: ranking.register decides). Each statement's spec or question is parsed once."""
    tokenizer = Snippets(connection, [])

    @lru_cache(maxsize=16)
    def snippets_for(spec: str) -> Snippets:
        return Snippets.from_spec(connection, spec)

    @lru_cache(maxsize=16)
    def overlap_for(question: str) -> Overlap:
        return Overlap(question.split())

    def temper_snippet(content: str | None, spec: str) -> str | None:
        return None if content is None else snippets_for(spec)(content)

    def temper_overlap(content: str | None, question: str) -> float | None:
        return None if content is None else overlap_for(question)(tokenizer.stems(content))

    connection.create_scalar_function("temper_snippet", temper_snippet, 2, deterministic=True)
    connection.create_scalar_function("temper_overlap", temper_overlap, 2, deterministic=True)


def cut_snippet(content: str, needle: str, width: int = 120) -> str:
    """A snippet made by hand around `needle` (for hits no index matched: scans, context turns)."""
    at = content.lower().find(needle.lower()) if needle else -1
    if at < 0:
        return content[:width] + ("…" if len(content) > width else "")
    start = max(0, at - width // 2)
    end = min(len(content), at + len(needle) + width // 2)
    marked = content[start:at] + "[" + content[at : at + len(needle)] + "]" + content[at + len(needle) : end]
    return ("…" if start else "") + marked + ("…" if end < len(content) else "")
