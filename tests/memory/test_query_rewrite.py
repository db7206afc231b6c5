"""Reading questions: which queries are questions, and the dates they name."""

from datetime import UTC, datetime

from memory.query_rewrite import TELL_DAYS, read_question

DAY = 86_400


def at(year: int, month: int, day: int) -> float:
    return datetime(year, month, day, tzinfo=UTC).timestamp()


def test_a_day_becomes_a_window_from_that_day_and_leaves_the_text() -> None:
    for text in (
        "Which team did John sign with on 21 May, 2023?",
        "Which team did John sign with on May 21, 2023?",
        "Which team did John sign with on 2023-05-21?",
    ):
        question = read_question(text)
        assert question.text == "Which team did John sign with ?", text
        assert question.window is not None
        assert question.window.since == at(2023, 5, 21)
        assert question.window.until == at(2023, 5, 21) + TELL_DAYS * DAY


def test_months_years_and_before() -> None:
    month = read_question("What did Maria donate in December 2023?").window
    assert month is not None and (month.since, month.until) == (at(2023, 12, 1), at(2024, 1, 8))
    year = read_question("How many times has Mel gone to the beach in 2023?").window
    assert year is not None and (year.since, year.until) == (at(2023, 1, 1), at(2024, 1, 8))
    before = read_question("What did Maria do last weekend before April 10, 2023?").window
    assert before is not None and (before.since, before.until) == (at(2023, 4, 2), at(2023, 4, 11))


def test_no_window_without_a_year_or_for_a_bare_number() -> None:
    for text in ("When did Mel go camping in June?", "what's the 2093 code for?", "February 31, 2023"):
        question = read_question(text)
        assert question.window is None, text
        assert question.text == text


def test_questions_and_keywords() -> None:
    assert read_question("where did my sister move?").is_question
    assert read_question("When did Caroline go to the support group").is_question
    assert not read_question("sister Lisbon").is_question
    assert not read_question('"billing service"').is_question
