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
"""

import re
from bisect import bisect_right
from collections.abc import Sequence

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

    def _stems(self, text: str, flags: int) -> list[str]:
        return self._tokenize(text.encode(), flags, None, include_offsets=False, include_colocated=False)

    def tokens(self, content: str) -> list[tuple[int, int, str]]:
        """`content`'s tokens as the index sees them: (start byte, end byte, stem)."""
        return self._tokenize(content.encode(), apsw.FTS5_TOKENIZE_DOCUMENT, None, include_colocated=False)

    def __call__(self, content: str, tokens: list[tuple[int, int, str]] | None = None) -> str | None:
        """`content` cut around its matches, or None when no term matches it; `tokens`:
        `self.tokens(content)` when the caller has them already."""
        data = content.encode()
        if tokens is None:
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
            centred = first - (SNIPPET_TOKENS - (last - first)) // 2
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


def cut_snippet(content: str, needle: str, width: int = 120) -> str:
    """A snippet made by hand around `needle` (for hits no index matched: scans, context turns)."""
    at = content.lower().find(needle.lower()) if needle else -1
    if at < 0:
        return content[:width] + ("…" if len(content) > width else "")
    start = max(0, at - width // 2)
    end = min(len(content), at + len(needle) + width // 2)
    marked = content[start:at] + "[" + content[at : at + len(needle)] + "]" + content[at + len(needle) : end]
    return ("…" if start else "") + marked + ("…" if end < len(content) else "")
