"""BM25 with document frequencies the caller supplies: the `temper_rank` FTS5 function.

FTS5's own bm25() computes each phrase's document frequency by reading the phrase's whole
posting list on the first row of every query: for a word in half of a million messages
that alone costs tens of milliseconds. search.py instead learns each term's frequency
with a probe that stops counting at a cap (rare terms get their exact count, common ones
are known to be common) and passes the counts in:

    temper_rank(messages_fts, df_0, df_1, ...)   -- one df per phrase; df < 0: not scored

Scores are positive, higher is better (FTS5's bm25 is negative). Same k1/b as FTS5.

    temper_rank_in(messages_fts, documents, df_0, ...)   -- documents: the size of the
        collection the dfs were counted in (a user's messages); < 0: the whole index

ranks among a subset: idf from that subset's counts (recall_rank.py), lengths as before.

    temper_matched(messages_fts)   -- how many of the query's phrases the row holds

    temper_counts(messages_fts, cap)   -- C only: each phrase's rows counted up to `cap`, and
                                          the rowid of the last counted ("n rowid n rowid ...")

    temper_leading(messages_fts, df_0, ...)        -- m: how many scored phrases (df >= 0)
                                                      the row holds, in order, before the
                                                      first it lacks
    temper_rank_leading(messages_fts, df_0, ...)   -- BM25 over those m phrases only

These two let one query answer all of search.py's relaxation stages at once: with the terms
in rarity order, a row holding the first m of n belongs to stage n - m and is scored as that
stage's own query would score it.

The functions run in C where `memory._fts5_rank` was built (pip builds it at install:
`memory/_fts5_rank.c`, the same arithmetic in the same order, so the same scores): FTS5 calls
a ranking function for every row a query matches, and a Python call costs about 1.5 µs a row
against a few tenths of one in C. The Python functions below are the reference the C ones are
tested against, and what runs where no C compiler was there at install (`NATIVE` says
whether the library was built) or where this SQLite will not load it.
"""

import importlib.util
import math
import weakref

import apsw

from . import snippets

K1 = 1.2
B = 0.75


def temper_rank(api: apsw.FTS5ExtensionApi, *dfs: float) -> float:
    return _bm25(api, api.row_count, dfs)


def temper_rank_in(api: apsw.FTS5ExtensionApi, documents: float, *dfs: float) -> float:
    return _bm25(api, api.row_count if documents < 0 else documents, dfs)


def temper_leading(api: apsw.FTS5ExtensionApi, *dfs: float) -> int:
    held = 0
    for phrase, df in enumerate(dfs):
        if df >= 0:
            if not api.phrase_column_offsets(phrase, 0):
                break
            held += 1
    return held


def temper_rank_leading(api: apsw.FTS5ExtensionApi, *dfs: float) -> float:
    return _bm25(api, api.row_count, dfs, leading=True)


def _bm25(
    api: apsw.FTS5ExtensionApi, documents: float, dfs: tuple[float, ...], leading: bool = False
) -> float:
    constants = api.aux_data
    if constants is None:  # once per query (the dfs are bound): FTS5 keeps the totals in one record
        average_length = max(api.column_total_size(0) / max(1, api.row_count), 1e-9)
        idfs = tuple(
            (phrase, max(1e-6, math.log((documents - df + 0.5) / (df + 0.5))))
            for phrase, df in enumerate(dfs)
            if df >= 0
        )
        constants = api.aux_data = (average_length, idfs)
    average_length, idfs = constants
    length_norm = K1 * (1 - B + B * api.column_size(0) / average_length)
    score = 0.0
    for phrase, idf in idfs:
        frequency = len(api.phrase_column_offsets(phrase, 0))
        if frequency:
            score += idf * frequency * (K1 + 1) / (frequency + length_norm)
        elif leading:
            break
    return score


def temper_matched(api: apsw.FTS5ExtensionApi) -> int:
    return sum(bool(api.phrase_locations(phrase)[0]) for phrase in range(api.phrase_count))


def _native_library() -> str | None:
    """Where the built C functions lie, or None where they were not built."""
    spec = importlib.util.find_spec("memory._fts5_rank")
    return None if spec is None else spec.origin


NATIVE_LIBRARY = _native_library()
NATIVE = NATIVE_LIBRARY is not None
_NATIVE_CONNECTIONS: "weakref.WeakSet[apsw.Connection]" = weakref.WeakSet()


def is_native(connection: apsw.Connection) -> bool:
    """Whether `connection` runs the C functions, temper_counts among them (Python has no
    fast equivalent: index_terms.py then counts with SQL)."""
    return connection in _NATIVE_CONNECTIONS


def register(connection: apsw.Connection, native: bool | None = None) -> None:
    """Give `connection` temper's ranking functions and snippets.py's text functions: the C
    ones where they were built and this SQLite loads them, else Python's (`native` None);
    `native` True: the C ones or an error; False: Python's."""
    if native is not False:
        try:
            _load_native(connection)
            _NATIVE_CONNECTIONS.add(connection)
            return
        except (RuntimeError, apsw.Error):
            if native:
                raise
    _NATIVE_CONNECTIONS.discard(connection)
    connection.register_fts5_function("temper_rank", temper_rank)
    connection.register_fts5_function("temper_rank_in", temper_rank_in)
    connection.register_fts5_function("temper_matched", temper_matched)
    connection.register_fts5_function("temper_leading", temper_leading)
    connection.register_fts5_function("temper_rank_leading", temper_rank_leading)
    snippets.register(connection)


def _load_native(connection: apsw.Connection) -> None:
    if NATIVE_LIBRARY is None:
        raise RuntimeError("memory._fts5_rank was not built (pip install needs a C compiler)")
    connection.enable_load_extension(True)
    try:  # only for this load: SQL cannot load libraries afterwards
        connection.load_extension(NATIVE_LIBRARY, "sqlite3_temperrank_init")
    finally:
        connection.enable_load_extension(False)
