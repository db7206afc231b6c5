"""Ranking a question's candidates by how well each answers it, among the asker's own messages.

The staged search (search.py) is built for keywords: a message holding every typed term
outranks one holding the rare ones, and document frequencies are global. A question asked
in plain words ("What did Melanie paint recently?") needs another order over the same
candidates (its pool: the first POOL of each staged ranking):

- **BM25 over the question's terms, joined with OR, with document frequencies counted in
  the search's scope** (the asking user's messages), not in the whole index. In one person's
  history the names of the people they talk with are everywhere ("Melanie" is in half of a
  conversation with Melanie) while globally they are rare: a global frequency lets the name
  outweigh the words that tell the turns apart. Counts stop at SCOPE_CAP, so a probe reads
  a bounded slice of a posting list however long the history is.
- **Inside the date the question names** (query_rewrite.py): score times 1 + WINDOW_BOOST.
- **Said by the person the question names**: a message written as a transcript line
  ("Melanie: ...") whose speaker is a word of the question gets 1 + SPEAKER_BOOST.

Session context and the turns beside each candidate come after (recall_context.py).

Invariant: only candidates are scored (one FTS5 query restricted to their rowids, plus one
capped probe per term), so the cost does not grow with the size of the history.
"""

import re

import apsw

from .query import ParsedQuery, all_of, any_of, in_content

# Candidates taken from each staged ranking (the date window's, then everything's). Equal to
# hybrid.CANDIDATES, so that the hybrid's lexical list (limit 50) starts with exactly what a
# lexical search of 10 returns.
POOL = 50
SCOPE_CAP = 5_000  # scope and document-frequency counts stop here
WINDOW_BOOST = 1.0
SPEAKER_BOOST = 0.3
COVERAGE = 1.0
_SPEAKER = re.compile(r"\s*([^\W\d_][\w'.\- ]{0,40}?)\s*:\s")


def question_scores(
    db: apsw.Connection,
    parsed: ParsedQuery,
    candidates: list[int],
    in_window: set[int],
    by_fragment: set[int],
    scope_tokens: list[str],
) -> dict[int, float]:
    """Each candidate that shares a word with the question: its score (positive, higher is better).

    Candidates that only the trigram index or the substring scan found keep a small score
    (they share no indexed word, but they were found), so none is lost.
    """
    if not candidates:
        return {}
    terms = parsed.terms
    scores: dict[int, float] = {}
    if terms:
        documents = _count(db, "{scope}: (" + all_of(scope_tokens) + ")") if scope_tokens else -1
        dfs = [_count(db, in_content(term.fts(), scope_tokens)) for term in terms]
        placeholders = ", ".join("?" * len(candidates))
        df_marks = ", ".join("?" * len(terms))
        rows = db.execute(
            f"select rowid, temper_rank_in(messages_fts, ?, {df_marks}), temper_matched(messages_fts) from messages_fts"
            f" where messages_fts match ? and rowid in ({placeholders})",
            (documents, *dfs, in_content(any_of(terms), []), *candidates),
        ).fetchall()
        scores = {
            message_id: score * (1 + COVERAGE * matched / len(terms))
            for message_id, score, matched in rows
            if score > 0
        }
    # Found by the trigram index or the substring scan, for a fragment no word holds (the
    # "1442" of "AF1442"): that fragment counts as much as the best word match.
    best = max(scores.values(), default=1.0)
    for message_id in candidates:
        if message_id in by_fragment or message_id not in scores:
            scores[message_id] = best + scores.get(message_id, 0.0)
    words = {term.text for term in terms if term.kind == "word"}
    speakers = _speakers(db, list(scores)) if words else {}
    for message_id in scores:
        if message_id in in_window:
            scores[message_id] *= 1 + WINDOW_BOOST
        if speakers.get(message_id, "") in words:
            scores[message_id] *= 1 + SPEAKER_BOOST
    return scores


def _count(db: apsw.Connection, expression: str) -> int:
    return db.execute(
        f"select count(*) from (select rowid from messages_fts where messages_fts match ? limit {SCOPE_CAP:d})",
        (expression,),
    ).fetchone()[0]


def _speakers(db: apsw.Connection, ids: list[int]) -> dict[int, str]:
    """The speaker of each message written as a transcript line ("Name: text"), lower case."""
    placeholders = ", ".join("?" * len(ids))
    speakers = {}
    for message_id, head in db.execute(
        f"select id, substr(content, 1, 48) from messages where id in ({placeholders})", ids
    ):
        match = _SPEAKER.match(head)
        if match:
            speakers[message_id] = match.group(1).lower()
    return speakers
