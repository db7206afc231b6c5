"""The text functions in C (memory/_fts5_text.c) give what the Python reference
(memory/snippets.py's Snippets and Overlap) gives, byte for byte, on texts built to reach
every branch: sentence starts, windows centred or at a sentence, phrases, prefixes, repeats,
terms numbered past 64, text outside ASCII."""

import random
from pathlib import Path

import apsw
import pytest

from memory import database, ranking
from memory.query import parse_query
from memory.snippets import Overlap, Snippets

WORDS = ["harbour", "boats", "moved", "moving", "café", "naïve", "billing", "service", "Ünïcode", "日本語"]
WORDS += ["the", "a", "to", "of", "I'm", "at", "x1", "postgres", "lisbon", "sister"] + [
    f"w{i}" for i in range(40)
]
GAPS = [" ", " ", " ", ", ", ". ", ": ", ".\n", " - ", ".  ", "...", ":", " (", ") ", "\t", "!? "]
QUERIES = [
    "harbour",
    "harbour boats",
    "moved sister",
    '"billing service" harbour',
    "postgr* boats",
    '"the harbour" "a café" w1',
    "naive cafe unicode",
    "w3 w4 w5 w6 w7",
    # terms numbered past 64 with phrases
    " ".join(f"w{i}" for i in range(40))
    + " harbour boats"
    + "".join(f' "w{i} w{i + 1}"' for i in range(30, 38)),
]


pytestmark = pytest.mark.usefixtures("native_built")


def _texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    filler = " ".join(f"w{i}" for i in range(14))
    texts = ["", "harbour", "no match here at all", "harbour. boats: moved"]
    # a phrase running past the window's end (the centring divides towards zero)
    texts += [f"{lead}harbour {filler} billing service {filler}" for lead in ("", "x ", "x y ")]
    # a sentence start near the matches: its window wins by the sentence bonus
    texts += [
        f"{filler} {filler}. The harbour w1 w2 w3. {filler} boats {filler}",
        f"{filler}: harbour {filler}",
    ]
    for _ in range(count):
        words = rng.choices(WORDS, k=rng.choice([1, 3, 8, 15, 16, 17, 30, 80, 300]))
        text = "".join(word + rng.choice(GAPS) for word in words)
        texts.append(text.strip() if rng.random() < 0.8 else text)
    return texts


@pytest.fixture
def connections(tmp_path: Path) -> tuple[apsw.Connection, apsw.Connection]:
    path = str(tmp_path / "text.db")
    native, python = apsw.Connection(path), apsw.Connection(path)
    ranking.register(native, native=True)
    ranking.register(python, native=False)
    return native, python


@pytest.mark.parametrize("query", QUERIES)
def test_the_c_snippet_is_the_python_snippet(
    connections: tuple[apsw.Connection, apsw.Connection], query: str
) -> None:
    native, python = connections
    cut = Snippets(native, parse_query(query).terms)
    texts = _texts(400, seed=len(query))
    expected = [cut(text) for text in texts]
    assert sum(snippet is not None for snippet in expected) > 20
    assert any(snippet and snippet.startswith("…") for snippet in expected)  # a window cut in
    for db in (native, python):
        got = [db.execute("select temper_snippet(?, ?)", (text, cut.spec)).fetchone()[0] for text in texts]
        assert got == expected


@pytest.mark.parametrize(
    "question", ["what did I say about the harbour boats?", "a a the the", "日本語 café", ""]
)
def test_the_c_overlap_is_the_python_overlap(
    connections: tuple[apsw.Connection, apsw.Connection], question: str
) -> None:
    native, python = connections
    stems = Snippets(native, []).stems(question)
    overlap = Overlap(stems)
    texts = _texts(300, seed=len(question))
    expected = [overlap(Snippets(native, []).stems(text)) for text in texts]
    assert len(set(expected)) > (3 if stems else 0)
    for db in (native, python):
        got = [
            db.execute("select temper_overlap(?, ?)", (text, " ".join(stems))).fetchone()[0] for text in texts
        ]
        assert got == expected  # floats compared exactly


def test_a_spec_that_changes_row_to_row_is_read_for_each(
    connections: tuple[apsw.Connection, apsw.Connection],
) -> None:
    native, _ = connections
    native.execute("create table t(content, spec, question)")
    cuts = [Snippets(native, parse_query(query).terms) for query in QUERIES[:4]]
    texts = _texts(40, seed=9)
    for i, text in enumerate(texts):
        cut = cuts[i % len(cuts)]
        native.execute(
            "insert into t values (?, ?, ?)", (text, cut.spec, " ".join(cut.stems(QUERIES[i % 4])))
        )
    rows = native.execute(
        "select content, spec, question, temper_snippet(content, spec), temper_overlap(content, question) from t"
    ).fetchall()
    for i, (content, _, question, snippet, share) in enumerate(rows):
        assert snippet == cuts[i % len(cuts)](content)
        assert share == Overlap(question.split())(Snippets(native, []).stems(content))


def test_null_content_gives_null(connections: tuple[apsw.Connection, apsw.Connection]) -> None:
    for db in connections:
        assert db.execute("select temper_snippet(null, 'w 0 x'), temper_overlap(null, 'x')").fetchone() == (
            None,
            None,
        )


def test_a_store_connection_has_them(tmp_path: Path) -> None:
    db = database.connect(tmp_path / "memory.db")
    assert (
        db.execute("select temper_snippet('the harbour at dawn', 'w 0 harbour')").fetchone()[0]
        == "the [harbour] at dawn"
    )
