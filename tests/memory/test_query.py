"""Any text a person types is a valid query: it never raises an SQL error."""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory import MemoryStore, NewMessage
from memory.query import MAX_TERMS, parse_query

HOSTILE = [
    "",
    " ",
    "?",
    '"',
    '"unbalanced',
    'a"b',
    "AND",
    "OR NOT",
    "NEAR(a b",
    "NEAR/3",
    "a AND OR b",
    "col:val",
    "{content}: x",
    "^start",
    "*",
    "**",
    "a*b*",
    "-",
    "--",
    "e-mail",
    "(((",
    ")",
    "'; drop table messages; --",
    "\x00",
    "🎉🎉",
    "👨‍👩‍👧",
    "x" * 10_000,
    "word " * 2_000,
    "日本語の質問",
    "Привет мир",
    "مرحبا",
    "\u202e",
    "\ufeff",
    "\\",
    "%",
    "_",
    "[",
    "]",
]


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory):
    path: Path = tmp_path_factory.mktemp("hostile") / "memory.db"
    with MemoryStore.open(path) as store:
        store.add_messages(
            NewMessage("s", "ana", "user", text, float(i), f"m{i}")
            for i, text in enumerate(
                ["AND OR NOT NEAR", "e-mail from bob", "日本語の質問です", "🎉 party", "100% sure"]
            )
        )
        yield store


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_queries_return_a_list(shared_store: MemoryStore, text: str) -> None:
    assert isinstance(shared_store.search(text, user="ana"), list)
    assert isinstance(shared_store.search(text, all_users=True), list)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=300))
def test_any_text_is_a_valid_query(shared_store: MemoryStore, text: str) -> None:
    hits = shared_store.search(text, user="ana", limit=5)
    assert len(hits) <= 5


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('ab "*-:(){}^AND OR NEAR')), max_size=60))
def test_operator_soup_parses_into_quoted_terms(text: str) -> None:
    parsed = parse_query(text)
    assert len(parsed.terms) <= MAX_TERMS
    for term in parsed.terms:
        expression = term.fts()
        assert expression.startswith('"')


def test_special_words_are_searched_as_words(shared_store: MemoryStore) -> None:
    assert [h.external_id for h in shared_store.search("NEAR", user="ana")] == ["m0"]
    assert [h.external_id for h in shared_store.search("e-mail", user="ana")] == ["m1"]
    assert [h.external_id for h in shared_store.search("100%", user="ana")] == ["m4"]
