import time

import pytest

from memory import MemoryStore, NewMessage
from memory.query import any_of, in_content, parse_query
from memory.snippets import Snippets

TEXTS = [
    "My sister just moved to Lisbon for her new job at the aquarium",
    "We decided to use Postgres 16 for the billing service. The billing team agreed: it ships next week.",
    "Meet me at the café near the station, then we walk to the old harbour and look at the boats "
    "that came in this morning. After that: lunch at the fish market, if the queue is short.",
    "Long notes first. Nothing here yet. Still nothing. Then the word appears: harbour, and once "
    "more harbour near the end of a very long sentence that goes on and on without a stop for ages",
    "moving moves moved mover: every form of move, and a removal that is not one",
]
FILLER = " ".join(f"f{i}" for i in range(14))
# A phrase that runs past the window's end: FTS5 centres the window dividing towards zero.
TEXTS += [f"{lead}harbour {FILLER} billing service {FILLER}" for lead in ("", "x ", "x y ")]
QUERIES = ["sister moved", '"billing service" team', "postgr*", "cafe harbour boats", "harbour", "move"]
QUERIES += ['harbour "billing service"']


@pytest.fixture
def texts(store: MemoryStore) -> MemoryStore:
    store.add_messages(
        NewMessage(session="s", user="ana", role="user", content=text, ts=time.time()) for text in TEXTS
    )
    return store


@pytest.mark.parametrize("query", QUERIES)
def test_snippets_are_the_ones_fts5_cuts(texts: MemoryStore, query: str) -> None:
    terms = parse_query(query).terms
    rows = texts.db.execute(
        "select snippet(messages_fts, 0, '[', ']', '…', 16), m.content from messages_fts"
        " join messages m on m.id = messages_fts.rowid where messages_fts match ?",
        (in_content(any_of(terms), []),),
    ).fetchall()
    assert rows
    cut = Snippets(texts.db, terms)
    for expected, content in rows:
        assert cut(content) == expected


def test_a_text_without_the_terms_has_no_snippet(texts: MemoryStore) -> None:
    assert Snippets(texts.db, parse_query("zebra").terms)(TEXTS[0]) is None


@pytest.mark.parametrize("query", QUERIES)
def test_the_sql_function_cuts_what_snippets_cuts(texts: MemoryStore, query: str) -> None:
    cut = Snippets(texts.db, parse_query(query).terms)
    rows = texts.db.execute(
        "select content, temper_snippet(content, ?) from messages", (cut.spec,)
    ).fetchall()
    assert [snippet for _, snippet in rows] == [cut(content) for content, _ in rows]
    assert any(snippet is not None for _, snippet in rows)
