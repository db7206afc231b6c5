"""The filters a message search is confined to: whose messages, which session, which role,
and a time window. Inside the word index, user, session and role are tokens of its `scope`
column (migration m002), so FTS5 intersects posting lists instead of filtering afterwards;
the trigram index and the substring scan, which have no such column, filter on `messages m`.
"""

from dataclasses import dataclass, replace

from .query_rewrite import TimeWindow

NO_SUCH_ID = -1  # a filter naming an unknown user or session: matches nothing


@dataclass(frozen=True)
class Scope:
    user_id: int | None = None
    session_id: int | None = None
    role: str | None = None
    since: float | None = None
    until: float | None = None

    @property
    def matches_nothing(self) -> bool:
        return NO_SUCH_ID in (self.user_id, self.session_id)

    def tokens(self) -> list[str]:
        """The scope column's tokens for these filters (see migration m002)."""
        tokens = []
        if self.user_id is not None:
            tokens.append(f"u{self.user_id}")
        if self.session_id is not None:
            tokens.append(f"s{self.session_id}")
        if self.role is not None:
            tokens.append(f"r{self.role[0]}")
        return tokens

    def time_sql(self) -> tuple[str, list[object]]:
        clauses: list[str] = []
        bindings: list[object] = []
        if self.since is not None:
            clauses.append(" and m.ts >= ?")
            bindings.append(self.since)
        if self.until is not None:
            clauses.append(" and m.ts < ?")
            bindings.append(self.until)
        return "".join(clauses), bindings

    def row_sql(self) -> tuple[str, list[object]]:
        """The same filters as SQL on `messages m`, for the trigram index and the scan."""
        clauses: list[str] = []
        bindings: list[object] = []
        for column, value in (
            ("user_id", self.user_id),
            ("session_id", self.session_id),
            ("role", self.role),
        ):
            if value is not None:
                clauses.append(f" and m.{column} = ?")
                bindings.append(value)
        time_clauses, time_bindings = self.time_sql()
        return "".join(clauses) + time_clauses, [*bindings, *time_bindings]

    def within(self, window: TimeWindow) -> "Scope":
        """This scope narrowed to `window`."""
        since = window.since if self.since is None else max(self.since, window.since)
        until = window.until if self.until is None else min(self.until, window.until)
        return replace(self, since=since, until=until)
