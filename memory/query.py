"""Turning whatever a person typed into safe FTS5 match expressions.

Invariant: every piece of user text reaches FTS5 inside double quotes (inner quotes doubled),
so no input, however hostile ("AND", NEAR(, unbalanced quotes, `?`, emoji, 10 kB), can be an
FTS5 syntax error. Structure the person meant is kept: "quoted phrases" stay phrases,
a trailing `*` asks for a prefix, hyphenated and dotted identifiers become phrases of their
parts (the word tokenizer splits them the same way). Stop words are dropped unless nothing
else is left. Text in scripts written without spaces (CJK, Thai...) is set aside for the
trigram index, because the word tokenizer sees a whole run of it as one token.
"""

import re
from dataclasses import dataclass, field
from typing import Literal

MAX_QUERY_CHARS = 2_000
MAX_TERMS = 16

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are aren as at be because been
    before being below between both but by can could couldn did didn do does doesn doing don
    down during each few for from further had hadn has hasn have haven having he her here hers
    herself him himself his how i if in into is isn it its itself just ll me mightn more most
    mustn my myself needn no nor not now o of off on once only or other our ours ourselves out
    over own re s same shan she should shouldn so some such t than that the their theirs them
    themselves then there these they this those through to too under until up ve very was
    wasn we were weren what when where which while who whom why will with won wouldn y you
    your yours yourself yourselves tell told remember recall say said know hey hi hello
    please pls remind ok okay thanks thank yeah yes oh um uh btw anyway actually really""".split()
)

# Scripts whose words are not separated by spaces.
_UNSPACED = (
    r"\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f"
    r"\u31a0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f"
)
_UNSPACED_RUN = re.compile(f"[{_UNSPACED}]+")
_PHRASE = re.compile(r'"([^"]+)"|\u201c([^\u201d]+)\u201d')
_TOKEN = re.compile(r"[^\W_](?:[\w.'\u2019-]*[^\W_])?\*?")
_WORD_PART = re.compile(r"[^\W_]+")
_POSSESSIVE = re.compile(r"['\u2019]s\b", re.IGNORECASE)
# Identifier-like tokens ("ERRCONN104", "0x8004", "db_prod"): worth a substring scan when
# no tokenizer splits them the way they were typed.
_IDENTIFIER = re.compile(r"[^\W_]*\d[\w.-]*|[A-Za-z]+_[\w.-]+")


@dataclass(frozen=True)
class Term:
    """One searchable unit: a word, a phrase of several words, or a prefix."""

    text: str
    kind: Literal["word", "phrase", "prefix"]

    def fts(self) -> str:
        quoted = '"' + self.text.replace('"', '""') + '"'
        return quoted + " *" if self.kind == "prefix" else quoted


@dataclass
class ParsedQuery:
    terms: list[Term] = field(default_factory=list)
    unspaced: list[str] = field(default_factory=list)  # fragments for the trigram index
    identifiers: list[str] = field(default_factory=list)  # fragments for the substring scan
    raw: str = ""

    @property
    def empty(self) -> bool:
        return not self.terms and not self.unspaced


def parse_query(text: str) -> ParsedQuery:
    """Split `text` into terms; never raises for any string."""
    text = text[:MAX_QUERY_CHARS].replace("\x00", " ")
    parsed = ParsedQuery(raw=text.strip())
    parsed.identifiers = [token for token in dict.fromkeys(_IDENTIFIER.findall(text)) if len(token) >= 3][
        :MAX_TERMS
    ]
    text = _POSSESSIVE.sub("", text)  # "grandma's soup": the message may say "grandma"
    candidates: list[Term] = []
    stop_terms: list[Term] = []

    def add_words(fragment: str) -> None:
        for run in _UNSPACED_RUN.findall(fragment):
            parsed.unspaced.append(run)
        fragment = _UNSPACED_RUN.sub(" ", fragment)
        for token in _TOKEN.findall(fragment):
            prefix = token.endswith("*")
            parts = _WORD_PART.findall(token.rstrip("*").lower())
            if not parts:
                continue
            if len(parts) > 1:
                candidates.append(Term(" ".join(parts), "phrase"))
            elif prefix:
                candidates.append(Term(parts[0], "prefix"))
            elif parts[0] in STOP_WORDS:
                stop_terms.append(Term(parts[0], "word"))
            else:
                candidates.append(Term(parts[0], "word"))

    position = 0
    for match in _PHRASE.finditer(text):
        add_words(text[position : match.start()])
        phrase = match.group(1) or match.group(2)
        for run in _UNSPACED_RUN.findall(phrase):
            parsed.unspaced.append(run)
        words = _WORD_PART.findall(_UNSPACED_RUN.sub(" ", phrase).lower())
        if len(words) == 1:
            candidates.append(Term(words[0], "word"))
        elif words:
            candidates.append(Term(" ".join(words), "phrase"))
        position = match.end()
    add_words(text[position:])

    # Stop words are searched only when nothing else was typed ("what is it").
    fallback = stop_terms if not parsed.unspaced else []
    parsed.terms = _dedupe(candidates or fallback)[:MAX_TERMS]
    parsed.unspaced = list(dict.fromkeys(parsed.unspaced))[:MAX_TERMS]
    return parsed


def _dedupe(terms: list[Term]) -> list[Term]:
    return list(dict.fromkeys(terms))


def all_of(terms: list[Term] | list[str]) -> str:
    return " AND ".join(_fts(term) for term in terms)


def any_of(terms: list[Term] | list[str]) -> str:
    return " OR ".join(_fts(term) for term in terms)


def _fts(term: Term | str) -> str:
    return term.fts() if isinstance(term, Term) else Term(term, "phrase").fts()


def in_content(expression: str, scope_tokens: list[str]) -> str:
    """Restrict `expression` to the content column and, if given, to the scope tokens."""
    body = "{content}: (" + expression + ")"
    if not scope_tokens:
        return body
    return "{scope}: (" + all_of(scope_tokens) + ") AND " + body
