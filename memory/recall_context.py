"""Session context: a message that asks lends part of its rank to the reply after it.

In a conversation the answer to a question is often not the turn that shares its words but
the reply to the turn that does: "Which team did you sign with?" / "The Minnesota Wolves!".
So for a question (query_rewrite.py says which queries are questions) each ranked message
gets the score 1 / (rank + 1); a ranked message that itself asks something (it ends with
"?") adds NEIGHBOUR_WEIGHT times its score to the next message of its session, which joins
the ranking if the search had not found it. Ranks, not BM25 values, because the stages of
search.py rank by stage first and their BM25 values are not comparable across stages.

Only asking turns lend, and only forwards: lending to every neighbour let the "Got it." after
each stated fact push answers out of the top five on the labelled set (bench/recall.py), and
measured no better on LoCoMo (docs/memory.md has the figures and the split that chose these).

Invariants:
- The reply must pass the same scope as the search (user, session, role, time): in a group
  chat the turn after one user's message may be another user's, and it never enters.
- The next message of the session is found through the `messages_session (session_id, id)`
  index: one index seek per asking message.
"""

import apsw

NEIGHBOUR_WEIGHT = 0.8
POOL = 30  # ranked messages a question's context is drawn from
_TRAILING = " \t\r\n.!)\"'"  # "did you?!" and "(really?)" ask too


def with_context(
    db: apsw.Connection, ranked: list[int], scope_sql: tuple[str, list[object]]
) -> list[tuple[int, float]]:
    """`ranked` message ids (best first) with the replies to those that ask: (id, score), best first.

    `scope_sql` is the scope's filter on `messages m` (search.Scope.row_sql()).
    """
    own = {message_id: 1.0 / (rank + 1) for rank, message_id in enumerate(ranked)}
    if not own:
        return []
    placeholders = ", ".join("?" * len(own))
    rows = db.execute(
        "select m.id, (select min(n.id) from messages n where n.session_id = m.session_id and n.id > m.id)"
        f" from messages m where m.id in ({placeholders}) and rtrim(m.content, ?) like '%?'",
        [*own, _TRAILING],
    ).fetchall()
    replies = {message_id: reply for message_id, reply in rows if reply is not None}
    allowed = _in_scope(db, set(replies.values()), scope_sql)
    total = dict(own)
    for message_id, reply in replies.items():
        if reply in allowed:
            total[reply] = total.get(reply, 0.0) + NEIGHBOUR_WEIGHT * own[message_id]
    return sorted(total.items(), key=lambda item: -item[1])


def _in_scope(db: apsw.Connection, ids: set[int], scope_sql: tuple[str, list[object]]) -> set[int]:
    if not ids:
        return set()
    filters, bindings = scope_sql
    placeholders = ", ".join("?" * len(ids))
    rows = db.execute(
        f"select m.id from messages m where m.id in ({placeholders}){filters}", [*ids, *bindings]
    )
    return {row[0] for row in rows}
