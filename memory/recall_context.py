"""Session context: a question's candidates ranked with the conversation around them.

In a conversation the answer to a question is often not the turn that shares its words but
one beside it: the reply to the turn that asks ("Which team did you sign with?" / "The
Minnesota Wolves!"), or the turn a remark comments on. And the turns that answer tend to sit
in the one session where the topic was talked about. So, for a question (query_rewrite.py
says which queries are questions), over its scored candidates (recall_rank.py):

1. **Session relevance**: each score is multiplied by 1 + SESSION_WEIGHT x the relevance of
   its session (the sum of its SESSION_TOP best candidate scores, each over the best of all,
   relative to the best session's). A lone match in an unrelated chat sinks below the turns
   of the session the question is about.
2. **The turns beside**: scores are divided by the best one; a candidate that asks something
   (has a "?") lends REPLY_WEIGHT times its score to the next message of its session, and
   every candidate lends BEFORE_WEIGHT times its score to the one before. A lent-to message
   joins the ranking if the search had not found it.

Scores, not ranks: a strong match lends more than a weak one. Only asking turns lend
forwards: lending to every next turn let the "Got it." after each stated fact push answers
down on the labelled set (bench/recall.py). The constants were chosen on LoCoMo
conversations 1-3 (docs/memory.md has the figures, and those of the conversations not used).

Invariants:
- A lent-to message must pass the same scope as the search (user, session, role, time): in
  a group chat the turn beside one user's message may be another user's, and it never enters.
- The turns beside are found through the `messages_session (session_id, id)` index: two
  index seeks per candidate.
"""

from collections import defaultdict

import apsw

SESSION_WEIGHT = 2.0
SESSION_TOP = 2
REPLY_WEIGHT = 0.8
BEFORE_WEIGHT = 0.2


def with_context(
    db: apsw.Connection, scores: dict[int, float], scope_sql: tuple[str, list[object]]
) -> list[tuple[int, float]]:
    """The candidates (`scores`: id -> positive score) and the turns beside them: (id, score),
    best first. `scope_sql` is the scope's filter on `messages m` (search.Scope.row_sql())."""
    if not scores:
        return []
    placeholders = ", ".join("?" * len(scores))
    rows = db.execute(
        "select m.id, m.session_id, instr(m.content, '?') > 0,"
        " (select max(n.id) from messages n where n.session_id = m.session_id and n.id < m.id),"
        " (select min(n.id) from messages n where n.session_id = m.session_id and n.id > m.id)"
        f" from messages m where m.id in ({placeholders})",
        list(scores),
    ).fetchall()
    own = _with_sessions(scores, {row[0]: row[1] for row in rows})
    allowed = _in_scope(db, {n for row in rows for n in row[3:] if n is not None}, scope_sql)
    total = dict(own)
    for message_id, _, asks, before, after in rows:
        if asks and after in allowed:
            total[after] = total.get(after, 0.0) + REPLY_WEIGHT * own[message_id]
        if before in allowed:
            total[before] = total.get(before, 0.0) + BEFORE_WEIGHT * own[message_id]
    return sorted(total.items(), key=lambda item: -item[1])


def _with_sessions(scores: dict[int, float], sessions: dict[int, int]) -> dict[int, float]:
    """Scores times their session's relevance, divided by the best (step 1 of the docstring)."""
    best = max(scores.values())
    by_session: dict[int, list[float]] = defaultdict(list)
    for message_id, score in scores.items():
        by_session[sessions.get(message_id, -message_id)].append(score / best)
    relevance = {key: sum(sorted(values, reverse=True)[:SESSION_TOP]) for key, values in by_session.items()}
    best_session = max(relevance.values())
    boosted = {
        message_id: score
        * (1 + SESSION_WEIGHT * relevance[sessions.get(message_id, -message_id)] / best_session)
        for message_id, score in scores.items()
    }
    top = max(boosted.values())
    return {message_id: score / top for message_id, score in boosted.items()}


def _in_scope(db: apsw.Connection, ids: set[int], scope_sql: tuple[str, list[object]]) -> set[int]:
    if not ids:
        return set()
    filters, bindings = scope_sql
    placeholders = ", ".join("?" * len(ids))
    rows = db.execute(
        f"select m.id from messages m where m.id in ({placeholders}){filters} and m.role != 'assistant'",
        [*ids, *bindings],
    )
    return {row[0] for row in rows}
