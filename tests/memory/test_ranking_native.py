"""The ranking functions in C (memory/_fts5_rank.c) give what the Python reference
(memory/ranking.py) gives, to the last bit, on real FTS5 queries over one SQLite file."""

import random
from pathlib import Path

import apsw
import pytest

from memory import MemoryStore, NewMessage, database, ranking
from memory.index_terms import COUNT_CAP, PROBE_CAP, IndexTerms
from memory.query import Term
from memory.scope import Scope

WORDS = [f"w{i}" for i in range(300)]


pytestmark = pytest.mark.usefixtures("native_built")


def _index(path: Path, rows: int = 3_000) -> None:
    rng = random.Random(5)
    db = apsw.Connection(str(path))
    db.execute("create virtual table t using fts5(content, scope)")
    with db:
        for rowid in range(1, rows + 1):
            # Frequent words repeat within a row, lengths vary 1-40 tokens: both terms of BM25 move.
            text = " ".join(rng.choices(WORDS[:20] + WORDS, k=rng.randint(1, 40)))
            db.execute(
                "insert into t(rowid, content, scope) values (?, ?, ?)", (rowid, text, f"u{rowid % 4} w3")
            )
    db.close()


def _connection(path: Path, native: bool) -> apsw.Connection:
    db = apsw.Connection(str(path))
    ranking.register(db, native=native)
    return db


# (expression, the select's functions): dfs of -1 leave a phrase unscored, as search.py
# passes for the scope's phrases; rank_in's first argument is the subset's size.
QUERIES = [
    ("w1", "temper_rank(t, 40), temper_matched(t), temper_leading(t, 40), temper_rank_leading(t, 40)"),
    ("w1 OR w2 OR w250", "temper_rank(t, 900, 1000, 3), temper_matched(t), temper_rank_in(t, 500, 9, 9, 9)"),
    (
        "{scope}: (u1) AND {content}: (w2 AND (w3 OR w2) AND (w4 OR w2))",
        "temper_rank(t, -1, 30, 800, -1, 12, -1), temper_leading(t, -1, 30, 800, -1, 12, -1),"
        " temper_rank_leading(t, -1, 30, 800, -1, 12, -1), temper_matched(t)",
    ),
    ("{scope}: (w3) AND {content}: (w3)", "temper_rank(t, -1, 3000), temper_rank_in(t, -1, -1, 7)"),
    ("w5 OR w6 OR w7", "temper_rank(t, 100, 200, 300), temper_leading(t, 100, 200, 300)"),
    ("w8", "temper_rank(t), temper_rank(t, 1, 2, 3), temper_leading(t)"),  # fewer or more dfs than phrases
]


@pytest.mark.parametrize(("expression", "functions"), QUERIES)
def test_the_c_functions_score_every_row_as_the_python_reference_does(
    tmp_path: Path, expression: str, functions: str
) -> None:
    _index(tmp_path / "index.db")
    answers = []
    for native in (True, False):
        db = _connection(tmp_path / "index.db", native)
        answers.append(
            db.execute(
                f"select rowid, {functions} from t where t match ? order by rowid", (expression,)
            ).fetchall()
        )
        db.close()
    c_rows, python_rows = answers
    assert len(c_rows) > 10
    assert c_rows == python_rows  # floats compared exactly: the same operations in the same order


def test_a_store_searches_alike_with_either_ranking(tmp_path: Path) -> None:
    rng = random.Random(9)
    queries = [" ".join(rng.sample(WORDS[:40], k)) for k in (1, 2, 3, 4, 5) for _ in range(6)]
    answers = []
    for native in (True, False):
        # A new connection each: a prepared statement keeps the functions it was prepared with.
        with MemoryStore.open(tmp_path / "memory.db") as store:
            if native:
                store.add_messages(
                    NewMessage(
                        session="s",
                        user="u1",
                        role="user",
                        content=" ".join(rng.choices(WORDS[:40], k=rng.randint(2, 25))),
                        ts=1e9 + i,
                    )
                    for i in range(400)
                )
            else:
                ranking.register(store.db, native=False)  # the Python functions replace the C ones
            answers.append(
                [[(hit.id, hit.score) for hit in store.search(query, user="u1")] for query in queries]
            )
    assert any(answers[0])
    assert answers[0] == answers[1]


def test_counting_inside_fts5_gives_the_counts_sql_gives(tmp_path: Path) -> None:
    """temper_counts (one OR query, each phrase counted by xQueryPhrase) against the count
    statements the Python path runs: the same capped counts and last rowids, so the same
    document frequencies and estimates, for rare and common words, phrases, prefixes, words
    that are also scope tokens, and words no message holds."""
    rng = random.Random(3)
    with MemoryStore.open(tmp_path / "memory.db") as store:
        store.add_messages(
            NewMessage(
                session=f"s{i % 7}",
                user=f"u{i % 3}",
                role="user",
                # w0-w4 in most messages (past the count cap of 250), the rest rarer
                content=" ".join(rng.choices(WORDS[:5], k=3) + rng.choices(WORDS, k=rng.randint(1, 12))),
                ts=1e9 + i,
            )
            for i in range(2_000)
        )
        db = store.db
        term_sets = [
            [Term(word, "word") for word in rng.sample(WORDS[:60], k)] for k in (1, 2, 3, 5) for _ in range(8)
        ]
        term_sets += [
            [Term("w1 w2", "phrase"), Term("w3", "word")],
            [Term("w1", "prefix"), Term("w27", "word")],
            [Term("user", "word"), Term("u1", "word")],  # scope tokens: not in the content column
            [Term("nowhere", "word"), Term("w2", "word")],
            [Term("nowhere", "word")],
        ]
        answers = []
        for native in (True, False):
            ranking.register(db, native=native)
            assert ranking.is_native(db) is native
            answers.append([
                (terms.df, terms._estimates)
                for terms in (IndexTerms(db, "messages_fts", term_set, Scope()) for term_set in term_sets)
            ])  # fmt: skip
    assert answers[0] == answers[1]
    dfs = [df for terms, _ in answers[0] for df in terms.values()]
    assert max(dfs) == PROBE_CAP and 0 < min(df for df in dfs if df) < COUNT_CAP and 0 in dfs


def test_loading_the_functions_leaves_sql_unable_to_load_libraries(tmp_path: Path) -> None:
    db = database.connect(tmp_path / "memory.db")
    with pytest.raises(apsw.Error, match="not authorized"):
        db.execute("select load_extension(?)", (ranking.NATIVE_LIBRARY,)).fetchall()


def test_rank_in_without_the_collection_size_is_a_clear_error(tmp_path: Path) -> None:
    _index(tmp_path / "index.db", rows=50)
    db = _connection(tmp_path / "index.db", native=True)
    with pytest.raises(apsw.SQLError, match="collection's size is missing"):
        db.execute("select temper_rank_in(t) from t where t match 'w1'").fetchall()


def test_a_library_this_sqlite_cannot_load_leaves_the_python_functions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _index(tmp_path / "index.db", rows=50)
    broken = tmp_path / "not-a-library.so"
    broken.write_bytes(b"not an ELF file")
    monkeypatch.setattr(ranking, "NATIVE_LIBRARY", str(broken))
    db = apsw.Connection(str(tmp_path / "index.db"))
    with pytest.raises(apsw.Error):
        ranking.register(db, native=True)  # asked for C: an error, not a quiet fallback
    ranking.register(db)  # the default: Python's functions, and searches still rank
    assert db.execute("select temper_rank(t, 5) from t where t match 'w1'").fetchall()
