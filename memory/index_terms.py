"""One index's side of a search: its query terms, their document frequencies, and the
bounded FTS5 queries that read its newest matches (search.py runs the stages over them).

The cost bound lives here: every query reads matches newest first and stops at WINDOW rows
(where fewer are expected, it reads them oldest first, which FTS5 does faster, and reverses
them: `_newest_first`);
document frequencies come from probes that stop counting at COUNT_CAP and extrapolate, capped
at PROBE_CAP (a term under RARE_DF is rare, and its stages are exact); a scoped query made of
common terms reads the scope's newest SCOPE_WINDOW rows first (`floors`).
"""

from collections.abc import Sequence

import apsw

from . import ranking
from .query import Term, all_of, any_of, in_content
from .scope import Scope

WINDOW = 250  # newest matches ranked per stage
SCOPE_WINDOW = 300  # a scope's newest rows searched first when its terms are common
MAX_DROPPED = 3  # relaxation drops at most this many of the most common terms
PROBE_CAP = 1_000  # document frequencies are capped here: a term this frequent is common
COUNT_CAP = 250  # probes count this many matches, and extrapolate beyond (>= RARE_DF)
RARE_DF = 250


class IndexTerms:
    """One index's query terms with their (capped) document frequencies.

    `floor`, when set, limits matches of dense terms to rowids at or above it (see floors()).
    """

    def __init__(self, db: apsw.Connection, table: str, terms: list[Term], scope: Scope) -> None:
        self.db = db
        self.table = table
        self.scope = scope
        self.all = terms
        self._span: tuple[int, int] | None = None  # _ids(), once read
        self.df, self._estimates = self._probe(terms)
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
                "select rowid from messages_fts where messages_fts match ?"
                f" order by rowid desc limit 1 offset {newest - 1:d}",
                ("{scope}: (" + all_of(tokens) + ")",),
            ).fetchone()
            if row is None:  # the scope is smaller than that: no floor needed
                break
            floors.append(row[0])
        return floors + [None]

    def _expression(self, body: str, with_scope: bool = True) -> str:
        if self.table == "messages_fts":
            return in_content(body, self.scope.tokens() if with_scope else [])
        return body  # the trigram index has no scope column: filtered by the join instead

    def _probe(self, terms: list[Term]) -> tuple[dict[Term, int], dict[Term, float]]:
        """Each term's document frequency capped at PROBE_CAP, and uncapped, for planning: one
        statement for all. Counts stop at COUNT_CAP; past it, the frequency is extrapolated
        from how far into the history (in ids) the first COUNT_CAP matches reach."""
        if not terms:
            return {}, {}
        rows = self._counts(terms)
        estimates = {term: float(count) for term, (count, _) in zip(terms, rows)}
        if any(count >= COUNT_CAP for count, _ in rows):
            low, span = self._ids()
            for term, (count, reach) in zip(terms, rows):
                if count >= COUNT_CAP:
                    estimates[term] = min(span, count * span / max(1, reach - low + 1))
        df = {term: min(PROBE_CAP, round(estimate)) for term, estimate in estimates.items()}
        return df, estimates

    def _counts(self, terms: list[Term]) -> list[tuple[int, int]]:
        """Each term's matches counted in rowid order up to COUNT_CAP, and the rowid of the last
        counted. With the C functions one row of an OR of the terms counts them all inside
        FTS5 (temper_counts: 0.03 against 0.06 ms for three terms at 200,000 messages);
        otherwise a count statement each, joined into one."""
        if ranking.is_native(self.db):
            expression = self._expression(" OR ".join(term.fts() for term in terms), with_scope=False)
            row = self.db.execute(
                f"select temper_counts({self.table}, {COUNT_CAP:d}) from {self.table}"
                f" where {self.table} match ? limit 1",
                (expression,),
            ).fetchone()
            if row is None:  # no term matches anything
                return [(0, 0)] * len(terms)
            numbers = [int(number) for number in row[0].split()]
            return list(zip(numbers[::2], numbers[1::2]))
        first = (
            f"select count(*), max(rowid) from (select rowid from {self.table}"
            f" where {self.table} match ? limit {COUNT_CAP:d})"
        )
        expressions = [self._expression(term.fts(), with_scope=False) for term in terms]
        return self.db.execute(" union all ".join([first] * len(terms)), expressions).fetchall()

    def _ids(self) -> tuple[int, int]:
        """The lowest message id, and how many ids there are from it to the highest (read
        once: a search's queries all plan with the same span)."""
        if self._span is None:
            low, high = self.db.execute(
                "select (select min(id) from messages), (select max(id) from messages)"
            ).fetchone()
            self._span = (0, 0) if low is None else (low, high - low + 1)
        return self._span

    def _expected(self, terms: list[Term], join: str = "and") -> float:
        """About how many messages hold all of `terms` (`join` "and"), were they independent,
        or any of them ("or"), at most (for planning)."""
        if join == "or":
            return sum(self._estimates[term] for term in terms)
        expected = span = float(max(1, self._ids()[1]))
        for term in terms:
            expected *= min(1.0, self._estimates[term] / span)
        return expected

    def match(self, terms: list[Term], join: str, window: int | None = None) -> list[tuple[int, float]]:
        """The newest `window` (default WINDOW) matches in scope with their BM25 relevance."""
        window = WINDOW if window is None else window
        body = all_of(terms) if join == "and" else any_of(terms)
        select, bindings = self._select(["temper_rank"], [self.df[term] for term in terms], body)
        # A rare term drives its own intersection cheaply: only all-dense matches use the floor.
        if self.floor is None or any(self.df[term] < PROBE_CAP for term in terms):
            if self._expected(terms, join) < window:  # likely all of them: see _newest_first
                rows = self._newest_first(select, bindings, window)
                if rows is not None:
                    return rows
            return self.db.execute(f"{select} order by f.rowid desc limit {window:d}", bindings).fetchall()
        # Above a floor the range is small: FTS5 walks it forwards about twice as fast as
        # backwards, and all of it is wanted anyway.
        rows = self.db.execute(f"{select} and f.rowid >= ?", (*bindings, self.floor)).fetchall()
        return rows[::-1][:window]

    def relaxed(self) -> list[list[tuple[int, float]]] | None:
        """Stage 0 and every relaxation stage (dropping 1..MAX_DROPPED of the commonest terms,
        two at least kept) from one query instead of one query each, or None where that one
        query could differ from them.

        It matches the AND of the terms the last stage keeps, the dropped ones as optional
        phrases (`"dropped" OR "rarest"` holds wherever the rarest does), all in rarity
        order, and reads each row's stage from how many of them it holds (ranking.py's
        temper_leading). Exact when it returns fewer than WINDOW rows: each stage's own
        query would then have returned all its matches, no window cut. So it gives up on a
        full window, and runs only where each stage's query would not use a floor (every one
        holds the rarest term) and, when all terms are common, where the AND it reads is
        expected to be well inside the window.
        """
        count = len(self.all)
        deepest = min(MAX_DROPPED, count - 2)
        if deepest < 1:
            return None
        kept, dropped = self.by_rarity[: count - deepest], self.by_rarity[count - deepest :]
        if self.df[kept[0]] >= PROBE_CAP and (self.floor is not None or self._expected(kept) >= WINDOW / 2):
            return None
        rarest = kept[0].fts()
        body = " AND ".join(
            [term.fts() for term in kept] + [f"({term.fts()} OR {rarest})" for term in dropped]
        )
        dfs = [self.df[term] for term in kept] + [df for term in dropped for df in (self.df[term], -1)]
        select, bindings = self._select(["temper_leading", "temper_rank_leading"], dfs, body)
        rows = self._newest_first(select, bindings, WINDOW)
        if rows is None:
            return None
        stages: list[list[tuple[int, float]]] = [[] for _ in range(deepest + 1)]
        for rowid, held, relevance in rows:
            stages[count - held].append((rowid, relevance))
        return stages

    def _newest_first(self, select: str, bindings: list[object], window: int) -> list[tuple] | None:
        """All of `select`'s rows, newest first, if there are fewer than `window`; else None.

        Read oldest first and reversed: FTS5 walks its posting lists forwards about a third
        faster than backwards (a typical search's stage query: 0.10 against 0.14 ms at
        200,000 messages), and once the rows are fewer than the window, the order they were
        read in changes nothing."""
        rows = self.db.execute(f"{select} order by f.rowid limit {window:d}", bindings).fetchall()
        return None if len(rows) >= window else rows[::-1]

    def _select(self, functions: list[str], dfs: Sequence[float], body: str) -> tuple[str, list[object]]:
        """`select f.rowid, <functions> ... where <body> matches in scope`, and its bindings:
        each function gets one df per phrase of the expression (-1 for the scope's)."""
        scope_phrases = len(self.scope.tokens()) if self.table == "messages_fts" else 0
        dfs = [-1] * scope_phrases + list(dfs)
        marks = ", ".join("?" * len(dfs))
        filters, filter_bindings = (
            self.scope.time_sql() if self.table == "messages_fts" else self.scope.row_sql()
        )
        join_messages = " join messages m on m.id = f.rowid" if filters else ""
        columns = ", ".join(f"{function}({self.table}, {marks})" for function in functions)
        return (
            f"select f.rowid, {columns} from {self.table} f{join_messages} where {self.table} match ?{filters}",
            [*dfs * len(functions), self._expression(body), *filter_bindings],
        )
