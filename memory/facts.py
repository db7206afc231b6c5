"""Facts: what temper has learned about each user (`store.facts`), and the profile it shows.

A fact is one short statement about one user ("is allergic to shellfish"), with a kind, the
messages it came from, a confidence, and when it was first and last stated. The planner
extracts them off the reply path (runtime/user_model.py); the person adds and removes them
through the `remember` and `forget_fact` tools.

    add(user, statement, ...)        a new fact, or the same fact restated: merged into it
    merge(user, fact_id, ...)        restated: one more mention, newer, never less confident
    supersede(user, old_id, ...)     contradicted: a new fact replaces the old, which stays as
                                     history (`superseded_by`; the new one `supersedes` it)
    forget(user, fact_id)            deleted with the history it replaced, its index entry too
    relevant(user, query, budget)    the profile: facts the index finds for the query, then the
                                     most stable ones, as many as fit in `budget` tokens

Invariants:
- Every method takes the user and touches only that user's facts: a fact id of another user is
  an unknown fact (UnknownRecordError), never read, merged, superseded or deleted.
- A fact's sources are messages of its own user (ValueError otherwise), so a fact cannot point
  into another person's conversation; a deleted message drops out of its facts' sources.
- `facts_fts` (migration m011) is an external-content index kept by triggers: a deleted fact's
  entry goes with it, and `forget` merges the index so the words leave its pages too.
- Confidence lies between 0 and 1; statements are 1 to MAX_STATEMENT_CHARS characters.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import apsw

from .errors import UnknownRecordError
from .records import Fact
from .writer import Writer

KINDS = ("preference", "biography", "relationship", "plan", "constraint", "other")
STABLE_KINDS = ("biography", "relationship", "constraint", "preference")  # ranked before plans
MAX_STATEMENT_CHARS = 500
RELEVANT_LIMIT = 8  # facts the index may contribute before the stable ones fill the budget
MAX_QUERY_TERMS = 24
LETTERS_PER_TOKEN = 5  # cautious: common English words are one token each, long ones two or three

_COLUMNS = (
    "f.id, f.user_id, f.statement, f.kind, f.confidence, f.mentions, f.created_at, f.updated_at,"
    " f.superseded_by, f.supersedes,"
    " (select group_concat(s.message_id) from fact_sources s where s.fact_id = f.id)"
)
_WORD = re.compile(r"\w+")
_PIECE = re.compile(r"[A-Za-z]+|[0-9]+|\S")
_NORMAL = re.compile(r"[^\w]+")
STOP_WORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have he her his how i if"
    " in is it its me my no not of on or our she so than that the their them then there they this to"
    " us was we were what when where which who why will with would you your about am any did know"
    " tell remember anything something".split()
)


@dataclass(frozen=True)
class FactChange:
    """What storing a fact did: `added` a new one, `merged` into the same one, or `superseded`
    an older one (`replaced` is the id of the fact now kept as history)."""

    fact: Fact
    action: str
    replaced: int | None = None


def estimate_tokens(text: str) -> int:
    """A cautious token count of `text`, for budgets: it over- rather than under-counts (a word of
    letters is a token per started LETTERS_PER_TOKEN, a number one per three digits and one
    more, any other character one), since no tokenizer is at hand here."""
    count = 0
    for piece in _PIECE.findall(text):
        if piece.isascii() and piece.isalpha():
            count += math.ceil(len(piece) / LETTERS_PER_TOKEN)
        elif piece.isdigit():  # tokenizers split numbers into groups of up to three, after a space
            count += math.ceil(len(piece) / 3) + 1
        else:
            count += len(piece)
    return max(1, count)


def profile_line(fact: Fact) -> str:
    """How a fact is shown in the prompt's profile section."""
    return f"- {fact.statement}"


class Facts:
    """The facts table of the store's database (`store.facts`)."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self._db = writer.db

    # --- writing -------------------------------------------------------------------------------

    def add(
        self, user_id: int, statement: str, *, kind: str = "other", sources: Sequence[int] = (),
        confidence: float = 0.8,
    ) -> FactChange:  # fmt: skip
        """Store a fact about the user; one that says what a current fact says (the same words,
        ignoring case and punctuation) is merged into it instead."""
        statement = _check(statement, kind, confidence)
        with self._writer.writing() as db:
            _check_sources(db, user_id, sources)
            same = self._same(user_id, statement)
            if same is not None:
                return FactChange(
                    self.merge(user_id, same.id, sources=sources, confidence=confidence), "merged"
                )
            fact_id = _insert(db, user_id, statement, kind, confidence, sources, supersedes=None)
            return FactChange(self.get(user_id, fact_id), "added")

    def merge(
        self, user_id: int, fact_id: int, *, sources: Sequence[int] = (), confidence: float | None = None,
        statement: str | None = None,
    ) -> Fact:  # fmt: skip
        """The fact was stated again: one more mention, updated now, its confidence the higher of
        the two, the new sources added; `statement` rewords it."""
        with self._writer.writing() as db:
            fact = self.get(user_id, fact_id)
            _check_sources(db, user_id, sources)
            new_confidence = fact.confidence if confidence is None else max(fact.confidence, confidence)
            new_statement = (
                fact.statement if statement is None else _check(statement, fact.kind, new_confidence)
            )
            db.execute(
                "update facts set statement = ?, confidence = ?, mentions = mentions + 1, updated_at = ?"
                " where id = ?",
                (new_statement, new_confidence, time.time(), fact_id),
            )
            _add_sources(db, fact_id, sources)
            return self.get(user_id, fact_id)

    def supersede(
        self, user_id: int, old_id: int, statement: str, *, kind: str | None = None,
        sources: Sequence[int] = (), confidence: float = 0.8,
    ) -> FactChange:  # fmt: skip
        """A new fact that contradicts the current fact `old_id` replaces it; the old one stays
        as history. Superseding a fact that is itself history supersedes its current successor."""
        with self._writer.writing() as db:
            old = self.get(user_id, old_id)
            while old.superseded_by is not None:
                old = self.get(user_id, old.superseded_by)
            statement = _check(statement, kind or old.kind, confidence)
            _check_sources(db, user_id, sources)
            new_id = _insert(db, user_id, statement, kind or old.kind, confidence, sources, supersedes=old.id)
            db.execute("update facts set superseded_by = ? where id = ?", (new_id, old.id))
            return FactChange(self.get(user_id, new_id), "superseded", replaced=old.id)

    def forget(self, user_id: int, fact_id: int) -> list[int]:
        """Delete the fact and the history it replaced (the person wants it gone, not kept as an
        old version); the ids deleted. Its words leave the index's pages too (an FTS merge)."""
        with self._writer.writing() as db:
            fact = self.get(user_id, fact_id)
            chain = [fact.id, *(old.id for old in self.history(user_id, fact.id)[1:])]
            later = fact.superseded_by
            while later is not None:  # forgetting an old version forgets what replaced it, too
                chain.append(later)
                later = self.get(user_id, later).superseded_by
            marks = ", ".join("?" * len(chain))
            db.execute(f"delete from facts where user_id = ? and id in ({marks})", (user_id, *chain))
            db.execute("insert into facts_fts(facts_fts) values ('optimize')")
        return chain

    # --- reading -------------------------------------------------------------------------------

    def get(self, user_id: int, fact_id: int) -> Fact:
        row = self._db.execute(
            f"select {_COLUMNS} from facts f where f.id = ? and f.user_id = ?", (fact_id, user_id)
        ).fetchone()
        if row is None:
            raise UnknownRecordError(f"this user has no fact {fact_id}")
        return _fact(row)

    def for_user(self, user_id: int, *, include_history: bool = False) -> list[Fact]:
        """The user's current facts (and superseded ones with `include_history`), most recently
        updated first."""
        history = "" if include_history else " and f.superseded_by is null"
        rows = self._db.execute(
            f"select {_COLUMNS} from facts f where f.user_id = ?{history} order by f.updated_at desc, f.id desc",
            (user_id,),
        ).fetchall()
        return [_fact(row) for row in rows]

    def history(self, user_id: int, fact_id: int) -> list[Fact]:
        """The fact, then the versions it superseded, newest first."""
        chain = [self.get(user_id, fact_id)]
        while chain[-1].supersedes is not None:
            try:
                chain.append(self.get(user_id, chain[-1].supersedes))
            except UnknownRecordError:  # split off with another identity (memory/linking.py)
                break
        return chain

    def search(self, user_id: int, query: str, limit: int = 10) -> list[Fact]:
        """The user's current facts that share words with `query`, best first (BM25)."""
        expression = match_expression(query)
        if expression is None or limit <= 0:
            return []
        rows = self._db.execute(
            f"select {_COLUMNS} from facts_fts join facts f on f.id = facts_fts.rowid"
            " where facts_fts match ? and f.user_id = ? and f.superseded_by is null"
            " order by bm25(facts_fts) limit ?",
            (f'scope : "u{user_id}" AND statement : ({expression})', user_id, limit),
        ).fetchall()
        return [_fact(row) for row in rows]

    def stable(self, user_id: int, limit: int = 50) -> list[Fact]:
        """The user's current facts most likely to stay true, first: lasting kinds (biography,
        relationships, constraints, preferences) before plans, then the most often stated, the
        most confident, the longest held."""
        kinds = ", ".join(f"'{kind}'" for kind in STABLE_KINDS)
        rows = self._db.execute(
            f"select {_COLUMNS} from facts f where f.user_id = ? and f.superseded_by is null"
            f" order by f.kind in ({kinds}) desc, f.mentions desc, f.confidence desc, f.created_at, f.id"
            " limit ?",
            (user_id, limit),
        ).fetchall()
        return [_fact(row) for row in rows]

    def relevant(
        self, user_id: int, query: str, budget_tokens: int, *, count: Callable[[str], int] = estimate_tokens
    ) -> list[Fact]:
        """The profile for a request: the facts the index finds for `query` (at most
        RELEVANT_LIMIT), then the most stable ones, each once, as many as fit in `budget_tokens`
        as `count` measures their profile lines."""
        chosen: list[Fact] = []
        seen: set[int] = set()
        left = budget_tokens
        for fact in (*self.search(user_id, query, RELEVANT_LIMIT), *self.stable(user_id)):
            if fact.id in seen:
                continue
            cost = count(profile_line(fact) + "\n")
            if cost <= left:
                chosen.append(fact)
                seen.add(fact.id)
                left -= cost
        return chosen

    # --- what extraction has read (table fact_extraction) -----------------------------------------

    def unread(self, session_id: int, user_id: int, max_chars: int) -> list[tuple[int, str, str]]:
        """The session's user and assistant messages of `user_id` after the extraction mark, oldest
        first, as (id, role, content), up to about `max_chars` of text (at least one message)."""
        rows = self._db.execute(
            "select id, role, content from messages where session_id = ? and user_id = ?"
            " and role in ('user', 'assistant') and content != ''"
            " and id > coalesce((select through_message_id from fact_extraction where session_id = ?), 0)"
            " order by id limit 500",
            (session_id, user_id, session_id),
        ).fetchall()
        taken: list[tuple[int, str, str]] = []
        used = 0
        for row in rows:
            if taken and used + len(row[2]) > max_chars:
                break
            taken.append((row[0], row[1], row[2]))
            used += len(row[2])
        return taken

    def unread_count(self, session_id: int, user_id: int) -> int:
        """How many of the user's own messages in the session extraction has not read yet."""
        return self._db.execute(
            "select count(*) from messages where session_id = ? and user_id = ? and role = 'user'"
            " and id > coalesce((select through_message_id from fact_extraction where session_id = ?), 0)",
            (session_id, user_id, session_id),
        ).fetchone()[0]

    def ended_unread(self, user_id: int, quiet_since: float, *, exclude: int, limit: int) -> list[int]:
        """The user's sessions, other than `exclude`, last used before `quiet_since` that still
        hold messages of theirs extraction has not read: oldest first."""
        rows = self._db.execute(
            "select s.id from sessions s where s.user_id = ? and s.updated_at < ? and s.id != ?"
            " and exists (select 1 from messages m where m.session_id = s.id and m.user_id = s.user_id"
            "  and m.role = 'user' and m.id > coalesce("
            "   (select through_message_id from fact_extraction x where x.session_id = s.id), 0))"
            " order by s.updated_at limit ?",
            (user_id, quiet_since, exclude, limit),
        ).fetchall()
        return [row[0] for row in rows]

    def mark_read(self, session_id: int, through_message_id: int) -> None:
        with self._writer.writing() as db:
            db.execute(
                "insert into fact_extraction(session_id, through_message_id) values (?, ?)"
                " on conflict(session_id) do update set through_message_id ="
                " max(through_message_id, excluded.through_message_id)",
                (session_id, through_message_id),
            )

    def _same(self, user_id: int, statement: str) -> Fact | None:
        wanted = normalize(statement)
        for fact in self.search(user_id, statement, limit=20):
            if normalize(fact.statement) == wanted:
                return fact
        return None


def normalize(statement: str) -> str:
    """A statement compared for sameness: lower case, punctuation and spacing ignored."""
    return _NORMAL.sub(" ", statement.casefold()).strip()


def match_expression(text: str) -> str | None:
    """An FTS5 OR-query of `text`'s words (quoted, stop words dropped), or None if none."""
    words = [word.lower() for word in _WORD.findall(text)]
    terms = [word for word in dict.fromkeys(words) if word not in STOP_WORDS and len(word) > 1]
    if not terms:
        terms = list(dict.fromkeys(words))
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms[:MAX_QUERY_TERMS])


def _check(statement: str, kind: str, confidence: float) -> str:
    statement = " ".join(statement.split())
    if not statement:
        raise ValueError("a fact needs a statement")
    if len(statement) > MAX_STATEMENT_CHARS:
        raise ValueError(f"a fact is at most {MAX_STATEMENT_CHARS} characters; this one has {len(statement)}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    if not 0.0 <= confidence <= 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    return statement


def _check_sources(db: apsw.Connection, user_id: int, sources: Iterable[int]) -> None:
    wanted = set(sources)
    if not wanted:
        return
    marks = ", ".join("?" * len(wanted))
    found = db.execute(
        f"select count(*) from messages where user_id = ? and id in ({marks})", (user_id, *wanted)
    ).fetchone()[0]
    if found != len(wanted):
        raise ValueError("a fact's sources must be messages of the same user")


def _insert(
    db: apsw.Connection, user_id: int, statement: str, kind: str, confidence: float, sources: Sequence[int],
    *, supersedes: int | None,
) -> int:  # fmt: skip
    now = time.time()
    first = sources[0] if sources else None
    db.execute(
        "insert into facts(user_id, statement, kind, source_message_id, confidence, created_at, updated_at,"
        " supersedes) values (?, ?, ?, ?, ?, ?, ?, ?)",
        (user_id, statement, kind, first, confidence, now, now, supersedes),
    )
    fact_id = db.last_insert_rowid()
    _add_sources(db, fact_id, sources)
    return fact_id


def _add_sources(db: apsw.Connection, fact_id: int, sources: Iterable[int]) -> None:
    db.executemany(
        "insert into fact_sources(fact_id, message_id) values (?, ?) on conflict do nothing",
        [(fact_id, message_id) for message_id in dict.fromkeys(sources)],
    )


def _fact(row: tuple) -> Fact:
    sources = tuple(sorted(int(part) for part in row[10].split(","))) if row[10] else ()
    return Fact(*row[:10], sources=sources)  # type: ignore[misc]  # ten positional fields, then sources
