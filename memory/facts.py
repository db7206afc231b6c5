"""Facts: what temper has learned about a user, each with a confidence and the message it came
from. The user model reads them into every turn's context.

Invariant: a fact's confidence lies between 0 and 1.
"""

import time

from .records import Fact
from .writer import Writer


class Facts:
    """The facts table of the store's database (`store.facts`)."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self._db = writer.db

    def add(
        self,
        user_id: int,
        statement: str,
        *,
        source_message_id: int | None = None,
        confidence: float = 0.8,
    ) -> int:
        if not 0.0 <= confidence <= 1.0:
            raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
        now = time.time()
        with self._writer.writing() as db:
            db.execute(
                "insert into facts(user_id, statement, source_message_id, confidence, created_at,"
                " updated_at) values (?, ?, ?, ?, ?, ?)",
                (user_id, statement, source_message_id, confidence, now, now),
            )
            return db.last_insert_rowid()

    def for_user(self, user_id: int) -> list[Fact]:
        """The user's facts, most recently updated first."""
        rows = self._db.execute(
            "select id, user_id, statement, source_message_id, confidence, created_at, updated_at"
            " from facts where user_id = ? order by updated_at desc",
            (user_id,),
        ).fetchall()
        return [Fact(*row) for row in rows]
