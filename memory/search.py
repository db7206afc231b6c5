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

The cost bound, which is where plain FTS5 is slow (~600 ms at p99 for common words at 1M):
  - each FTS query reads matches newest first (`order by rowid desc`, served natively by
    FTS5) and stops at WINDOW rows, so a query made only of common words ranks its newest
    WINDOW matches instead of hundreds of thousands;
  - document frequencies come from probes that stop counting at PROBE_CAP, never from a
    full posting-list read; a term under RARE_DF is rare and its stages are exact;
  - scope filters (user, session, role) are tokens in the index's `scope` column, so FTS5
    intersects posting lists rather than filtering afterwards.
"""

import math
import time
from collections.abc import Collection
from dataclasses import dataclass, replace

import apsw

from .query import ParsedQuery, Term, all_of, any_of, in_content, parse_query
from .query_rewrite import TimeWindow, read_question
from .recall_context import with_context
from .recall_rank import POOL, question_scores
from .records import SearchHit
from .snippets import SNIPPET_TOKENS, Snippets, cut_snippet

NO_SUCH_ID = -1  # a filter naming an unknown user or session: matches nothing
WINDOW = 250  # newest matches ranked per stage
SCOPE_WINDOW = 300  # a scope's newest rows searched first when its terms are common
OR_WINDOW = 100  # OR of common words: weak matches, ranked in a smaller window
MAX_DROPPED = 3  # relaxation drops at most this many of the most common terms
OR_STAGE = MAX_DROPPED + 1
OVERLAP_WEIGHT = 2.0
PROBE_CAP = 1_000  # document-frequency probes stop counting here
RARE_DF = 250
SCAN_CAP = 20_000  # newest messages in scope that a substring scan reads
MAX_LIMIT = 200
RECENCY_WEIGHT = 0.25
HALF_LIFE_DAYS = 30.0
STAGED_PRIOR = 0.3  # a question's rerank: weight of the staged order (see _question_scores)


@dataclass(frozen=True)
class Scope:
    user_id: int | None = None
    session_id: int | None = None
    role: str | None = None
    since: float | None = None
    until: float | None = None

    @property
    def matches_nothing(self) -> bool:
        return NO_SUCH_ID in (self.user_id, self.session_id)

    def tokens(self) -> list[str]:
        """The scope column's tokens for these filters (see migration m002)."""
        tokens = []
        if self.user_id is not None:
            tokens.append(f"u{self.user_id}")
        if self.session_id is not None:
            tokens.append(f"s{self.session_id}")
        if self.role is not None:
            tokens.append(f"r{self.role[0]}")
        return tokens

    def time_sql(self) -> tuple[str, list[object]]:
        clauses: list[str] = []
        bindings: list[object] = []
        if self.since is not None:
            clauses.append(" and m.ts >= ?")
            bindings.append(self.since)
        if self.until is not None:
            clauses.append(" and m.ts < ?")
            bindings.append(self.until)
        return "".join(clauses), bindings

    def row_sql(self) -> tuple[str, list[object]]:
        """The same filters as SQL on `messages m`, for the trigram index and the scan."""
        clauses: list[str] = []
        bindings: list[object] = []
        for column, value in (
            ("user_id", self.user_id),
            ("session_id", self.session_id),
            ("role", self.role),
        ):
            if value is not None:
                clauses.append(f" and m.{column} = ?")
                bindings.append(value)
        time_clauses, time_bindings = self.time_sql()
        return "".join(clauses) + time_clauses, [*bindings, *time_bindings]

    def within(self, window: TimeWindow) -> "Scope":
        """This scope narrowed to `window`."""
        since = window.since if self.since is None else max(self.since, window.since)
        until = window.until if self.until is None else min(self.until, window.until)
        return replace(self, since=since, until=until)


class _Found:
    """Candidates by message id: the stage that first found each, and its relevance."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
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
        return ranked[: max(3 * self.limit, 30)]


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
    ranked: list[_Ranked] = []
    if question.window is not None:  # the hits from around the date the question names first
        ranked = _ranked(db, parsed, scope.within(question.window), pool, question.is_question)
    in_window = [item.row[0] for item in ranked]
    seen = set(in_window)
    rest = [
        item for item in _ranked(db, parsed, scope, pool, question.is_question) if item.row[0] not in seen
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
    by_fragment = {item.row[0] for item in ranked if item.index != "messages_fts"}
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
    db: apsw.Connection, parsed: ParsedQuery, scope: Scope, size: int, or_fill: bool
) -> list["_Ranked"]:
    """The staged search's candidates in `scope`, best first; `or_fill`: see _run_stages."""
    found = _Found(size)
    words = _Terms(db, "messages_fts", parsed.terms, scope)
    trigrams = _Terms(db, "messages_trigram", _trigram_terms(parsed), scope)
    for floor in words.floors():
        words.floor = floor
        _run_stages(db, found, parsed, [words, trigrams], scope, or_fill)
        if found.full:
            break
    return _rank(db, found, parsed)


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
    indexes: list["_Terms"],
    scope: Scope,
    or_fill: bool,
) -> None:
    """Adds the stages' matches to `found`. Without `or_fill` (keywords), the OR stages run
    only when no message holds all the terms, or all but the commonest: messages that share
    one keyword are noise below those, and ranking their window was most of a search's cost.
    A question fills its pool with them (recall_rank.py reranks them)."""
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


class _Terms:
    """One index's query terms with their (capped) document frequencies.

    `floor`, when set, limits matches of dense terms to rowids at or above it (see floors()).
    """

    def __init__(self, db: apsw.Connection, table: str, terms: list[Term], scope: Scope) -> None:
        self.db = db
        self.table = table
        self.scope = scope
        self.all = terms
        self.df = self._probe(terms)
        self.rare = [term for term in terms if self.df[term] < RARE_DF]
        self.by_rarity = sorted(terms, key=self.df.__getitem__)
        self.floor: int | None = None

    def floors(self) -> list[int | None]:
        """Rowid floors to search from, narrowest first, ending with None (everything).

        Intersecting a scope with posting lists that hold a large share of all messages
        costs a seek per scope row in each list (measured: ~9 ms for a user's 1,000 rows and
        three common words). When a scoped query has common terms, its stages first read
        only the scope's newest SCOPE_WINDOW rows, and widen while they find too little.
        """
        tokens = self.scope.tokens()
        if self.table != "messages_fts" or not tokens or all(self.df[t] < PROBE_CAP for t in self.all):
            return [None]
        floors: list[int | None] = []
        for newest in (SCOPE_WINDOW, 4 * SCOPE_WINDOW):
            row = self.db.execute(
                "select rowid from messages_fts where messages_fts match ? order by rowid desc limit 1 offset ?",
                ("{scope}: (" + all_of(tokens) + ")", newest - 1),
            ).fetchone()
            if row is None:  # the scope is smaller than that: no floor needed
                break
            floors.append(row[0])
        return floors + [None]

    def _expression(self, body: str, with_scope: bool = True) -> str:
        if self.table == "messages_fts":
            return in_content(body, self.scope.tokens() if with_scope else [])
        return body  # the trigram index has no scope column: filtered by the join instead

    def _probe(self, terms: list[Term]) -> dict[Term, int]:
        """Each term's document frequency, capped at PROBE_CAP: one statement for all."""
        if not terms:
            return {}
        count = f"(select count(*) from (select rowid from {self.table} where {self.table} match ? limit ?))"
        bindings: list[object] = []
        for term in terms:
            bindings += [self._expression(term.fts(), with_scope=False), PROBE_CAP]
        row = self.db.execute("select " + ", ".join([count] * len(terms)), bindings).fetchone()
        return dict(zip(terms, row))

    def match(self, terms: list[Term], join: str, window: int = WINDOW) -> list[tuple[int, float]]:
        """The newest `window` matches in scope with their BM25 relevance."""
        body = all_of(terms) if join == "and" else any_of(terms)
        scope_phrases = len(self.scope.tokens()) if self.table == "messages_fts" else 0
        dfs = [-1] * scope_phrases + [self.df[term] for term in terms]
        placeholders = ", ".join("?" * len(dfs))
        bindings: list[object]
        if self.table == "messages_fts":
            filters, bindings = self.scope.time_sql()
        else:
            filters, bindings = self.scope.row_sql()
        join_messages = " join messages m on m.id = f.rowid" if filters else ""
        select = (
            f"select f.rowid, temper_rank({self.table}, {placeholders}) from {self.table} f{join_messages}"
        )
        # A rare term drives its own intersection cheaply: only all-dense matches use the floor.
        if self.floor is None or any(self.df[term] < PROBE_CAP for term in terms):
            return self.db.execute(
                f"{select} where {self.table} match ?{filters} order by f.rowid desc limit ?",
                (*dfs, self._expression(body), *bindings, window),
            ).fetchall()
        # Above a floor the range is small: FTS5 walks it forwards about twice as fast as
        # backwards, and all of it is wanted anyway.
        rows = self.db.execute(
            f"{select} where {self.table} match ?{filters} and f.rowid >= ?",
            (*dfs, self._expression(body), *bindings, self.floor),
        ).fetchall()
        return rows[::-1][:window]


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
        newest = "select rowid as id from messages_fts where messages_fts match ? order by rowid desc limit ?"
        newest_bindings: list[object] = ["{scope}: (" + all_of(tokens) + ")", SCAN_CAP]
    else:
        newest, newest_bindings = "select id from messages order by id desc limit ?", [SCAN_CAP]
    time_sql, time_bindings = scope.time_sql()
    contains = " or ".join("instr(lower(m.content), ?) > 0" for _ in fragments)
    return db.execute(
        f"select m.id, 1.0 from messages m where m.id in ({newest}){time_sql}"
        f" and ({contains}) order by m.id desc limit ?",
        (*newest_bindings, *time_bindings, *(f.lower() for f in fragments), WINDOW),
    ).fetchall()


@dataclass(frozen=True)
class _Ranked:
    score: float
    index: str  # the index that found it: which snippet to cut
    row: tuple  # the seven columns of a Message
    overlap: float = 0.0  # _Overlap's share of the question the message repeats
    tokens: list[tuple[int, int, str]] | None = None  # its content's tokens, for the snippet


def _rank(db: apsw.Connection, found: _Found, parsed: ParsedQuery) -> list[_Ranked]:
    shortlist = found.shortlist()
    if not shortlist:
        return []
    rows = _rows(db, [message_id for message_id, _ in shortlist])
    now = time.time()
    snippets = Snippets(db, parsed.terms)  # each row is tokenised once, for both
    tokens = {message_id: snippets.tokens(row[5]) for message_id, row in rows.items()}
    overlap = _Overlap([token[2] for token in snippets.tokens(parsed.raw)])
    shares = {message_id: overlap([token[2] for token in tokens[message_id]]) for message_id in rows}
    blended = sorted(
        (
            (stage, _blend(relevance, row[6], now) + OVERLAP_WEIGHT * shares[message_id], index, row)
            for message_id, (stage, relevance, index) in shortlist
            if (row := rows.get(message_id)) is not None
        ),
        key=lambda item: (item[0], -item[1]),
    )
    return [_Ranked(score, index, row, shares[row[0]], tokens[row[0]]) for _, score, index, row in blended]


def _rows(db: apsw.Connection, ids: list[int]) -> dict[int, tuple]:
    if not ids:
        return {}
    placeholders = ", ".join("?" * len(ids))
    return {
        row[0]: row
        for row in db.execute(
            "select m.id, m.external_id, s.key, u.handle, m.role, m.content, m.ts"
            " from messages m join sessions s on s.id = m.session_id"
            f" join users u on u.id = m.user_id where m.id in ({placeholders})",
            ids,
        )
    }


def _hits(
    db: apsw.Connection, order: list[tuple[int, float]], ranked: list[_Ranked], parsed: ParsedQuery
) -> list[SearchHit]:
    known = {item.row[0]: item for item in ranked}
    context_rows = _rows(db, [message_id for message_id, _ in order if message_id not in known])
    snippets = Snippets(db, parsed.terms)
    trigram = any_of(_trigram_terms(parsed)) or None
    hits = []
    for message_id, score in order:
        item = known.get(message_id)
        row = item.row if item is not None else context_rows.get(message_id)
        if row is None:
            continue
        snippet = None
        if item is not None and item.index == "messages_fts":
            snippet = snippets(row[5], item.tokens)
        elif item is not None and item.index == "messages_trigram" and trigram:
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


class _Overlap:
    """How much of the question a text repeats: the share of its stemmed words and of its
    adjacent word pairs, stop words included.

    A tie-breaker for the shortlist, where BM25 has ignored stop words and word order:
    "what am I allergic to?" searches "allergic", and among the messages that say it,
    "I'm allergic to sesame" shares more of the question than "Mei is allergic to cats";
    "my brother's wedding" shares a pair with the question that "my brother gave a speech
    at the wedding" does not.
    """

    def __init__(self, question: list[str]) -> None:
        """`question`: the question's stems (Snippets.tokens), as the index's tokenizer cuts them."""
        self._words = set(question)
        self._pairs = set(zip(question, question[1:]))

    def __call__(self, words: list[str]) -> float:
        """The share for a text whose stems are `words`."""
        if not self._words:
            return 0.0
        score = len(self._words.intersection(words)) / len(self._words)
        if self._pairs:
            score += len(self._pairs.intersection(zip(words, words[1:]))) / len(self._pairs)
        return score
