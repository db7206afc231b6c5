"""The people temper knows (`store.users`): who they are, what it holds about each, and the two
things a person may ask of their data: a copy of all of it, and that all of it be forgotten.

    store.users.all()                every user with their identities and how much is held
    store.users.resolve("telegram:123" | "ana" | "#7")   a user id from what an operator types
    store.users.export(user_id, out) everything about the user as JSON Lines (user_export.py)
    store.users.forget(user_id)      delete all of it, down to the file's bytes (forget.py)

Names resolve in that order: an identity (`platform:id`), then a user handle, then `#<user id>`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from . import forget, user_export
from .errors import UnknownRecordError
from .writer import Writer


@dataclass(frozen=True)
class Identity:
    platform: str
    platform_user_id: str
    created_at: float

    def __str__(self) -> str:
        return f"{self.platform}:{self.platform_user_id}"


@dataclass(frozen=True)
class UserSummary:
    id: int
    handle: str
    display_name: str | None
    created_at: float
    identities: tuple[Identity, ...]
    sessions: int
    messages: int
    facts: int  # current facts (superseded ones are history)
    episodes: int
    last_seen: float | None  # the newest message's time


_SUMMARY = (
    "select u.id, u.handle, u.display_name, u.created_at,"
    " (select count(*) from sessions s where s.user_id = u.id),"
    " (select count(*) from messages m where m.user_id = u.id),"
    " (select count(*) from facts f where f.user_id = u.id and f.superseded_by is null),"
    " (select count(*) from episodes e where e.user_id = u.id),"
    " (select max(m.ts) from messages m where m.user_id = u.id)"
    " from users u"
)


class Users:
    """The users table and what hangs off it (`store.users`)."""

    def __init__(self, writer: Writer, path: Path | None, on_change: Callable[[], None]) -> None:
        self._writer = writer
        self._db = writer.db
        self._path = path
        self._on_change = on_change  # a user was deleted: the store's id caches must forget it

    def all(self) -> list[UserSummary]:
        rows = self._db.execute(f"{_SUMMARY} order by u.id").fetchall()
        return [self._summary(row) for row in rows]

    def get(self, user_id: int) -> UserSummary:
        row = self._db.execute(f"{_SUMMARY} where u.id = ?", (user_id,)).fetchone()
        if row is None:
            raise UnknownRecordError(f"no user with id {user_id}")
        return self._summary(row)

    def identities(self, user_id: int) -> list[Identity]:
        rows = self._db.execute(
            "select platform, platform_user_id, created_at from identities where user_id = ?"
            " order by created_at, platform, platform_user_id",
            (user_id,),
        ).fetchall()
        return [Identity(*row) for row in rows]

    def resolve(self, name: str) -> int:
        """The user `name` means: an identity `platform:id`, a handle, or `#<user id>`."""
        text = name.strip()
        platform, _, platform_user_id = text.partition(":")
        if platform_user_id:
            row = self._db.execute(
                "select user_id from identities where platform = ? and platform_user_id = ?",
                (platform, platform_user_id),
            ).fetchone()
            if row is not None:
                return int(row[0])
        row = self._db.execute("select id from users where handle = ?", (text,)).fetchone()
        if row is None and text.startswith("#") and text[1:].isdigit():
            row = self._db.execute("select id from users where id = ?", (int(text[1:]),)).fetchone()
        if row is None:
            raise UnknownRecordError(
                f"no user {name!r}: give an identity like telegram:12345, a handle, or #<id>"
                " (`temper users list` shows them)"
            )
        return int(row[0])

    def export(self, user_id: int, out: IO[str]) -> dict[str, int]:
        """Write everything held about the user to `out` as JSON Lines; lines by record type."""
        self.get(user_id)
        return user_export.export_user(self._db, user_id, out)

    def forget(self, user_id: int) -> forget.ForgetReport:
        """Delete everything held about the user, then checkpoint and vacuum the database so
        the text is gone from its files (forget.py says what goes and what cannot)."""
        self.get(user_id)
        try:
            return forget.forget_user(self._writer, user_id, self._path)
        finally:
            self._on_change()

    def _summary(self, row: tuple) -> UserSummary:
        user_id, handle, display_name, created_at, sessions, messages, facts, episodes, last_seen = row
        return UserSummary(
            user_id, handle, display_name, created_at, tuple(self.identities(user_id)), sessions, messages,
            facts, episodes, last_seen,
        )  # fmt: skip
