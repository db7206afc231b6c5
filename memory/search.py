"""Finding the messages that answer a question, fast at a million messages.

How a query runs (each stage only if the ones before found fewer than `limit` hits; keywords,
unlike questions, stop before the OR stages once stage 0 or 1 found anything):

  0. AND of all terms in the word index (porter stems: "moved" finds "move"), and AND of
     the unspaced-script fragments (CJK...) in the trigram index.
  1. AND of the rare terms only: a question's common words ("work", "time") are the ones a
     weeks-old answer is least likely to share.
  2. OR of the rare terms (ranked exactly), then OR of all terms (newest window).
  3. A bounded substring scan of the newest messages in scope, for fragments no tokenizer
     splits out ("80040154" inside "0x80040154").

Hits of an earlier stage rank above those of a later one; within a stage by BM25 (see
ranking.py), then the best few are blended with recency (a boost that halves every
HALF_LIFE_DAYS).

A question is read as one first (query_rewrite.py): a date it names ("on 21 May, 2023")
leaves the words and its time window is searched first. The first recall_rank.POOL
candidates of each ranking (inside the window, everywhere) are then reranked for the
question: BM25 with frequencies counted in the asker's own messages, the window and the
speaker the question names preferred (recall_rank.py), then session context and the turns
beside each candidate (recall_context.py). Keywords get none of this.

The cost bound, which is where plain FTS5 is slow (~600 ms at p99 for common words at 1M),
is each index's queries' (index_terms.py):
  - each FTS query reads matches newest first (`order by rowid desc`, served natively by
    FTS5) and stops at a window of rows, so a query made only of common words ranks its
    newest matches instead of hundreds of thousands (a query expected to find fewer rows
    than its window reads them oldest first, a third faster in FTS5, and reverses them);
  - document frequencies come from probes that stop counting early, never from a full
    posting-list read: exact below the cap, extrapolated beyond it;
  - scope filters (user, session, role) are tokens in the index's `scope` column, so FTS5
    intersects posting lists rather than filtering afterwards;
  - limits are written into the SQL, not bound: SQLite hands an FTS5 query's LIMIT to the
    index, and a statement whose bound LIMIT the index has seen is prepared again on every
    run (measured: 10-30 us a statement, a tenth of a typical search).
"""

import math
import time
from collections.abc import Collection, Sequence
from typing import NamedTuple

import apsw

from .index_terms import MAX_DROPPED, WINDOW, IndexTerms
from .query import ParsedQuery, Term, all_of, any_of, parse_query
from .query_rewrite import read_question
from .recall_context import with_context
from .recall_rank import POOL, question_scores
from .records import SearchHit
from .scope import Scope
from .snippets import SNIPPET_TOKENS, Snippets, cut_snippet

OR_WINDOW = 100  # OR of common words: weak matches, ranked in a smaller window
OR_STAGE = MAX_DROPPED + 1
OVERLAP_WEIGHT = 2.0
SCAN_CAP = 20_000  # newest messages in scope that a substring scan reads
MAX_LIMIT = 200
RECENCY_WEIGHT = 0.25
HALF_LIFE_DAYS = 30.0
STAGED_PRIOR = 0.3  # a question's rerank: weight of the staged order (see _question_scores)


class _Found:
    """Candidates by message id: the stage that first found each, and its relevance;
    `shortlist` of them are ranked (blended with recency and the overlap)."""

    def __init__(self, limit: int, shortlist: int) -> None:
        self.limit = limit
        self.shortlist_size = shortlist
        self.by_id: dict[int, tuple[int, float, str]] = {}

    @property
    def full(self) -> bool:
        return len(self.by_id) >= self.limit

    def add(self, stage: int, index: str, rows: list[tuple[int, float]]) -> None:
        for message_id, relevance in rows:
            self.by_id.setdefault(message_id, (stage, relevance, index))

    def shortlist(self) -> list[tuple[int, tuple[int, float, str]]]:
        # Recency can lift a hit by at most 1 + RECENCY_WEIGHT, so it only reorders near
        # neighbours: blending the best few is enough.
        ranked = sorted(self.by_id.items(), key=lambda item: (item[1][0], -item[1][1]))
        return ranked[: self.shortlist_size]


def _shortlist_size(size: int, is_question: bool) -> int:
    """How many of the best-relevance candidates are ranked. A question's pool is reranked
    for it (recall_rank.py), so it ranks three times its pool; keywords rank their limit and
    half as many again (at least 5 more): each ranked candidate is read and tokenised in
    Python, ~12 us, and with 30 for a limit of 10 that was a fifth of the slowest searches
    (bench/memory.py, p90 at 200,000 messages: 0.74 -> 0.59 ms, the hit rate the same within
    a query or two; chosen on a second query set, docs/benchmarks.md)."""
    return max(3 * size, 30) if is_question else size + max(5, size // 2)


def _blend(relevance: float, ts: float, now: float) -> float:
    age_days = max(0.0, now - ts) / 86_400
    return relevance * (1.0 + RECENCY_WEIGHT * math.pow(0.5, age_days / HALF_LIFE_DAYS))


def search_messages(db: apsw.Connection, text: str, scope: Scope, limit: int = 10) -> list[SearchHit]:
    question = read_question(text)
    parsed = parse_query(question.text)
    if parsed.empty or scope.matches_nothing:
        return []
    limit = max(1, min(limit, MAX_LIMIT))
    pool = max(limit, POOL) if question.is_question else limit
    snippets = Snippets(db, parsed.terms)  # the terms' and the question's stems
    ranked: list[_Ranked] = []
    if question.window is not None:  # the hits from around the date the question names first
        ranked = _ranked(db, parsed, snippets, scope.within(question.window), pool, question.is_question)
    in_window = [item.row[0] for item in ranked]
    seen = set(in_window)
    rest = [
        item
        for item in _ranked(db, parsed, snippets, scope, pool, question.is_question)
        if item.row[0] not in seen
    ]
    ranked += rest
    if question.is_question:  # the first `pool` of each ranking, reranked for the question
        candidates = in_window[:pool] + [item.row[0] for item in rest[:pool]]
        scores = _question_scores(db, parsed, scope, ranked, candidates, set(in_window))
        order = with_context(db, scores, scope.row_sql())[:limit]
    else:
        order = [(item.row[0], item.score) for item in ranked[:limit]]
    return _hits(db, order, ranked, parsed)


def _question_scores(
    db: apsw.Connection,
    parsed: ParsedQuery,
    scope: Scope,
    ranked: list["_Ranked"],
    candidates: list[int],
    in_window: set[int],
) -> dict[int, float]:
    """recall_rank.py's scores, blended like the staged ranking's (recency, overlap with the
    question), plus STAGED_PRIOR / (staged rank + 1): the staged order still breaks near-ties
    (a message holding every typed term beats one holding the rarest only)."""
    by_fragment = {item.row[0] for item in ranked if item.found_by != "messages_fts"}
    scores = question_scores(db, parsed, candidates, in_window, by_fragment, scope.tokens())
    if not scores:
        return {}
    items = {item.row[0]: item for item in ranked}
    now = time.time()
    blended = {
        m: _blend(s, items[m].row[6], now) + OVERLAP_WEIGHT * items[m].overlap for m, s in scores.items()
    }
    top = max(blended.values())
    staged = {message_id: rank for rank, message_id in enumerate(candidates)}
    return {m: s / top + STAGED_PRIOR / (staged[m] + 1) for m, s in blended.items()}


def _ranked(
    db: apsw.Connection, parsed: ParsedQuery, snippets: Snippets, scope: Scope, size: int, or_fill: bool
) -> list["_Ranked"]:
    """The staged search's candidates in `scope`, best first; `or_fill`: see _run_stages."""
    found = _Found(size, _shortlist_size(size, or_fill))
    words = IndexTerms(db, "messages_fts", parsed.terms, scope)
    trigrams = IndexTerms(db, "messages_trigram", _trigram_terms(parsed), scope)
    for floor in words.floors():
        words.floor = floor
        _run_stages(db, found, parsed, [words, trigrams], scope, or_fill)
        if found.full:
            break
    return _rank(db, found, parsed, snippets)


def has_messages_outside(db: apsw.Connection, user_id: int, ids: Collection[int]) -> bool:
    """Whether the user has a message whose id is not in `ids`: reads at most len(ids) + 1 ids
    of the user's posting list in the scope column, however many messages they have."""
    rows = db.execute(
        "select rowid from messages_fts where messages_fts match ? limit ?",
        ("{scope}: " + all_of(Scope(user_id=user_id).tokens()), len(ids) + 1),
    )
    return any(row[0] not in ids for row in rows)


def _run_stages(
    db: apsw.Connection,
    found: _Found,
    parsed: ParsedQuery,
    indexes: list[IndexTerms],
    scope: Scope,
    or_fill: bool,
) -> None:
    """Adds the stages' matches to `found`. Without `or_fill` (keywords), the OR stages run
    only when no message holds all the terms, or all but the commonest: messages that share
    one keyword are noise below those, and ranking their window was most of a search's cost.
    A question fills its pool with them (recall_rank.py reranks them)."""
    words, trigrams = indexes
    staged = None if trigrams.all else words.relaxed()
    if staged is not None:
        for stage, rows in enumerate(staged):
            if stage == 0 or not found.full:
                found.add(stage, words.table, rows)
    else:
        for terms in indexes:
            if terms.all:
                found.add(0, terms.table, terms.match(terms.all, "and"))
        # Relax: drop the most common term, then the next, while at least two remain.
        for dropped in range(1, MAX_DROPPED + 1):
            for terms in indexes:
                kept = terms.by_rarity[: len(terms.all) - dropped]
                if not found.full and len(kept) >= 2:
                    found.add(dropped, terms.table, terms.match(kept, "and"))
    # An identifier no message has as a word ("CONN104" of "ERRCONN104") is worth a
    # substring scan before the weak OR matches.
    unknown = [t for t in parsed.identifiers if indexes[0].df.get(Term(t.lower(), "word"), 1) == 0]
    if not found.full and unknown:
        found.add(OR_STAGE, "scan", _scan(db, unknown, scope))
    if not or_fill and any(stage <= 1 for stage, _, _ in found.by_id.values()):
        return
    for terms in indexes:
        if not found.full and len(terms.all) > 1:
            if terms.rare:
                found.add(OR_STAGE + 1, terms.table, terms.match(terms.rare, "or"))
            if not found.full and len(terms.rare) < len(terms.all):
                found.add(OR_STAGE + 1, terms.table, terms.match(terms.all, "or", window=OR_WINDOW))
    fragments = _scan_fragments(parsed)
    if not found.full and fragments:
        found.add(OR_STAGE + 2, "scan", _scan(db, fragments, scope))


def _trigram_terms(parsed: ParsedQuery) -> list[Term]:
    # Trigrams need three characters; shorter fragments are left to the scan.
    return [Term(fragment, "phrase") for fragment in parsed.unspaced if len(fragment) >= 3]


def _scan_fragments(parsed: ParsedQuery) -> list[str]:
    """What a substring scan looks for: identifiers typed in the question, a lone
    fragment typed as the whole query, and unspaced-script words too short for trigrams."""
    fragments = list(parsed.identifiers)
    raw = parsed.raw
    if 2 <= len(raw) <= 64 and not any(character.isspace() for character in raw):
        fragments.append(raw)
    fragments += [fragment for fragment in parsed.unspaced if len(fragment) < 3]
    return list(dict.fromkeys(fragments))[:4]


def _scan(db: apsw.Connection, fragments: list[str], scope: Scope) -> list[tuple[int, float]]:
    """Messages containing any of `fragments` among the newest SCAN_CAP in scope."""
    tokens = scope.tokens()
    if tokens:  # the scope's newest rows come from the index's scope column, no table scan
        newest = f"select rowid as id from messages_fts where messages_fts match ? order by rowid desc limit {SCAN_CAP:d}"
        newest_bindings: list[object] = ["{scope}: (" + all_of(tokens) + ")"]
    else:
        newest, newest_bindings = f"select id from messages order by id desc limit {SCAN_CAP:d}", []
    time_sql, time_bindings = scope.time_sql()
    contains = " or ".join("instr(lower(m.content), ?) > 0" for _ in fragments)
    return db.execute(
        f"select m.id, 1.0 from messages m where m.id in ({newest}){time_sql}"
        f" and ({contains}) order by m.id desc limit ?",
        (*newest_bindings, *time_bindings, *(f.lower() for f in fragments), WINDOW),
    ).fetchall()


class _Ranked(NamedTuple):  # a tuple: dozens are made per search
    score: float
    found_by: str  # the index that found it: which snippet to cut
    row: tuple  # the seven columns of a Message
    overlap: float = 0.0  # snippets.Overlap's share of the question the message repeats
    snippet: str | None = None  # its content cut around the terms (a messages_fts hit's)


def _rank(db: apsw.Connection, found: _Found, parsed: ParsedQuery, snippets: Snippets) -> list[_Ranked]:
    shortlist = found.shortlist()
    if not shortlist:
        return []
    # The overlap and the snippet come with the rows (SQL functions, snippets.py): each
    # candidate's text is tokenised once, in C where it was built.
    question = " ".join(snippets.stems(parsed.raw))
    rows = _rows(
        db,
        [message_id for message_id, _ in shortlist],
        ", temper_overlap(m.content, ?), temper_snippet(m.content, ?)",
        [question, snippets.spec],
    )
    now = time.time()
    staged: list[tuple[int, _Ranked]] = []
    for message_id, (stage, relevance, index) in shortlist:
        row = rows.get(message_id)
        if row is not None:
            message, share, snippet = row[:7], row[7], row[8]
            score = _blend(relevance, message[6], now) + OVERLAP_WEIGHT * share
            staged.append((stage, _Ranked(score, index, message, share, snippet)))
    staged.sort(key=lambda item: (item[0], -item[1].score))
    return [item for _, item in staged]


def _rows(
    db: apsw.Connection, ids: list[int], extra: str = "", bindings: Sequence[object] = ()
) -> dict[int, tuple]:
    """The messages `ids` as Message's seven columns, and the columns of `extra` (a select
    list's tail, its parameters in `bindings`), by id."""
    if not ids:
        return {}
    placeholders = ", ".join("?" * len(ids))
    return {
        row[0]: row
        for row in db.execute(
            f"select m.id, m.external_id, s.key, u.handle, m.role, m.content, m.ts{extra}"
            " from messages m join sessions s on s.id = m.session_id"
            f" join users u on u.id = m.user_id where m.id in ({placeholders})",
            [*bindings, *ids],
        )
    }


def _hits(
    db: apsw.Connection,
    order: list[tuple[int, float]],
    ranked: list[_Ranked],
    parsed: ParsedQuery,
) -> list[SearchHit]:
    known = {item.row[0]: item for item in ranked}
    context_rows = _rows(db, [message_id for message_id, _ in order if message_id not in known])
    trigram = any_of(_trigram_terms(parsed)) or None
    hits = []
    for message_id, score in order:
        item = known.get(message_id)
        row = item.row if item is not None else context_rows.get(message_id)
        if row is None:
            continue
        snippet = None
        if item is not None and item.found_by == "messages_fts":
            snippet = item.snippet
        elif item is not None and item.found_by == "messages_trigram" and trigram:
            snippet = _trigram_snippet(db, message_id, trigram)
        hits.append(SearchHit(*row, score=score, snippet=snippet or cut_snippet(row[5], parsed.raw)))  # type: ignore[misc]
    return hits


def _trigram_snippet(db: apsw.Connection, message_id: int, expression: str) -> str | None:
    row = db.execute(
        f"select snippet(messages_trigram, 0, '[', ']', '…', {SNIPPET_TOKENS}) from messages_trigram"
        " where messages_trigram match ? and rowid = ?",
        (expression, message_id),
    ).fetchone()
    return None if row is None else row[0]
