"""Reading a question as a question: is it one, and which dates does it name?

People ask memory in plain words: "Which team did John sign with on 21 May, 2023?". Two
things in that form help a search and neither is a word to match:

- **It is a question.** The answer is often the turn *beside* the one that shares its
  words ("Which team did you sign with?" / "The Minnesota Wolves!"), so a question gets
  session context (recall_context.py); a list of keywords does not, and finds only the
  messages that contain them.
- **It names a date.** "on 21 May, 2023", "in December 2023", "in 2023", "before April 10,
  2023": no message says "2023", but messages written around then are the likely answers.
  The date leaves the text and becomes a `TimeWindow` the search prefers (its hits rank
  first) without filtering by it: a wrong guess costs order, never the answer.

A date without a year ("in June") names no window: it stays a word of the query.

Windows are in UTC and generous after the date, because a thing is usually told on the day
it happened or within the week after: a day [day, day + 8 d), a month [first day, last day
+ 8 d), a year [1 Jan, 31 Dec + 8 d); "before DATE" [DATE - 8 d, DATE + 1 d).

Invariant: never raises; text with no date comes back unchanged.
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

TELL_DAYS = 8  # how long after an event people are assumed to mention it

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_LEAD = r"(?:(?P<lead>on|in|during|around|since|before|by|after|of)\s+(?:the\s+)?)?"
_DATES = [
    re.compile(_LEAD + pattern + r"\b", re.IGNORECASE)
    for pattern in (
        _YEAR + r"-(?P<month_number>[01]?\d)-" + _DAY,  # 2023-05-21
        _DAY + r"\s+(?:of\s+)?" + _MONTH + r",?\s+" + _YEAR,  # 21 May, 2023
        _MONTH + r"\s+" + _DAY + r",?\s+" + _YEAR,  # May 21, 2023
        _MONTH + r",?\s+" + _YEAR,  # December 2023
        r"(?<![\d:/.-])" + _YEAR + r"(?![\d:/.-])",  # in 2023 (a lead word needed: see _window)
    )
]
_DIGIT = re.compile(r"\d")
_QUESTION_START = re.compile(
    r"^\W*(what|when|where|who|whom|whose|which|why|how|did|do|does|is|are|was|were|has|have|had"
    r"|can|could|would|will|should|shall)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class TimeWindow:
    since: float
    until: float


@dataclass(frozen=True)
class Question:
    text: str  # what to search for: the dates taken out
    is_question: bool
    window: TimeWindow | None = None


def read_question(text: str) -> Question:
    is_question = text.rstrip().endswith("?") or bool(_QUESTION_START.match(text))
    if not _DIGIT.search(text):  # every date form has a year
        return Question(text, is_question)
    for pattern in _DATES:
        for match in pattern.finditer(text):
            window = _window(match)
            if window is not None:
                rest = (text[: match.start()] + " " + text[match.end() :]).strip()
                return Question(re.sub(r"\s+", " ", rest), is_question, window)
    return Question(text, is_question)


def _window(match: re.Match[str]) -> TimeWindow | None:
    fields = match.groupdict()
    year = int(fields["year"])
    if fields.get("month") is None and fields.get("month_number") is None and not fields.get("lead"):
        return None  # a bare number ("the 2093 code") is no year
    month_name = (fields.get("month") or "").lower()
    month = int(fields["month_number"]) if fields.get("month_number") else _MONTHS.get(month_name)
    try:
        if month is None:
            start, end = datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
        elif fields.get("day") is None:
            start = datetime(year, month, 1, tzinfo=UTC)
            end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
        else:
            start = datetime(year, month, int(fields["day"]), tzinfo=UTC)
            end = start + timedelta(days=1)
    except ValueError:  # 31 February
        return None
    tell = timedelta(days=TELL_DAYS)
    if (fields.get("lead") or "").lower() in ("before", "by"):
        return TimeWindow((end - timedelta(days=1) - tell).timestamp(), end.timestamp())
    return TimeWindow(start.timestamp(), (end + tell - timedelta(days=1)).timestamp())
