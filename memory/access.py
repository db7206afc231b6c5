"""Who may talk to temper besides the configured allowlists: grants made by pairing.

A person the allowlist does not know gets a one-time pairing code; the operator approves it
(`temper pairing approve CODE`), which grants that platform user access for good (until
revoked).

Invariants:
- Codes are 8 characters from a 32-letter alphabet without look-alikes (40 bits), drawn with
  `secrets`, shown as ABCD-EFGH and accepted in any case, with or without the dash.
- A user has at most one live code; a new one is issued only after the last expired, at most
  `per_user_per_day` a day, and only while fewer than `max_pending` codes are live in all (a
  flood of strangers cannot fill the database or the operator's list).
- Failed approvals are counted: after `FAILURE_LIMIT` within `FAILURE_WINDOW_S`, approving is
  refused until the window passes, so codes cannot be guessed through whatever calls `approve`.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

import apsw

from .errors import MemoryStoreError
from .writer import Writer

ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no I, O, 0, 1: read aloud or retyped without doubt
CODE_LENGTH = 8
FAILURE_LIMIT = 5
FAILURE_WINDOW_S = 15 * 60.0
DAY_S = 86_400.0


class PairingError(MemoryStoreError):
    """A pairing code that cannot be approved: unknown, expired, or too many failed tries."""


@dataclass(frozen=True)
class PairingCode:
    code: str
    platform: str
    platform_user_id: str
    chat_id: str
    user_name: str | None
    created_at: float
    expires_at: float

    @property
    def display(self) -> str:
        return f"{self.code[:4]}-{self.code[4:]}"


@dataclass(frozen=True)
class Grant:
    platform: str
    platform_user_id: str
    user_name: str | None
    via: str  # "pairing" or "operator"
    granted_at: float


_CODE = "code, platform, platform_user_id, chat_id, user_name, created_at, expires_at"


def normalize(code: str) -> str:
    return "".join(code.split()).replace("-", "").upper()


class Access:
    """The pairing-code and grant tables of the store's database (`store.access`)."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self._db = writer.db

    def issue_code(
        self, platform: str, platform_user_id: str, chat_id: str, user_name: str | None, *, ttl_s: float,
        per_user_per_day: int, max_pending: int,
    ) -> PairingCode | None:  # fmt: skip
        """A new pairing code for the user; None while one is live or a limit says not now."""
        with self._writer.writing() as db:
            now = time.time()
            live = db.execute(
                "select 1 from pairing_codes where platform = ? and platform_user_id = ? and status = 'pending'"
                " and expires_at > ?",
                (platform, platform_user_id, now),
            ).fetchone()
            if live is not None:
                return None
            issued_today = db.execute(
                "select count(*) from pairing_codes where platform = ? and platform_user_id = ? and created_at > ?",
                (platform, platform_user_id, now - DAY_S),
            ).fetchone()[0]
            pending = db.execute(
                "select count(*) from pairing_codes where status = 'pending' and expires_at > ?", (now,)
            )
            if issued_today >= per_user_per_day or pending.fetchone()[0] >= max_pending:
                return None
            code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
            db.execute(
                f"insert into pairing_codes({_CODE}) values (?, ?, ?, ?, ?, ?, ?)",
                (code, platform, platform_user_id, chat_id, user_name, now, now + ttl_s),
            )
        return PairingCode(code, platform, platform_user_id, chat_id, user_name, now, now + ttl_s)

    def approve(self, code: str) -> Grant:
        """Let in the user `code` was issued to; PairingError (after recording the failed try) if
        the code is unknown or expired, or too many tries failed lately."""
        with self._writer.writing() as db:
            outcome = _approve(db, code, time.time())
        if isinstance(outcome, str):
            raise PairingError(outcome)
        return outcome

    def grant(self, platform: str, platform_user_id: str, user_name: str | None = None) -> Grant:
        """The operator lets a user in directly, without a code."""
        with self._writer.writing() as db:
            return _grant(db, platform, platform_user_id, user_name, "operator", time.time())

    def revoke(self, platform: str, platform_user_id: str) -> bool:
        """Withdraw the user's grant and any live code; whether there was a grant."""
        with self._writer.writing() as db:
            db.execute(
                "update pairing_codes set status = 'revoked' where platform = ? and platform_user_id = ? and status = 'pending'",
                (platform, platform_user_id),
            )
            db.execute(
                "delete from access_grants where platform = ? and platform_user_id = ?",
                (platform, platform_user_id),
            )
            return db.changes() > 0

    def has_grant(self, platform: str, platform_user_id: str) -> bool:
        row = self._db.execute(
            "select 1 from access_grants where platform = ? and platform_user_id = ?",
            (platform, platform_user_id),
        ).fetchone()
        return row is not None

    def grants(self) -> list[Grant]:
        rows = self._db.execute(
            "select platform, platform_user_id, user_name, via, granted_at from access_grants order by granted_at"
        ).fetchall()
        return [Grant(*row) for row in rows]

    def pending_codes(self) -> list[PairingCode]:
        rows = self._db.execute(
            f"select {_CODE} from pairing_codes where status = 'pending' and expires_at > ? order by created_at",
            (time.time(),),
        ).fetchall()
        return [PairingCode(*row) for row in rows]

    def prune(self, older_than_s: float) -> int:
        """Forget codes and failed tries older than `older_than_s` (grants stay); how many codes."""
        with self._writer.writing() as db:
            before = time.time() - older_than_s
            db.execute("delete from pairing_codes where created_at < ?", (before,))
            removed = db.changes()
            db.execute("delete from pairing_failures where at < ?", (before,))
        return removed


def _approve(db: apsw.Connection, code: str, now: float) -> Grant | str:
    """The grant, or why not, as one line: a refusal is recorded as a failed try, so the
    caller commits in both cases."""
    recent = db.execute("select count(*) from pairing_failures where at > ?", (now - FAILURE_WINDOW_S,))
    if recent.fetchone()[0] >= FAILURE_LIMIT:
        return (
            f"too many failed pairing attempts; wait {FAILURE_WINDOW_S / 60:.0f} minutes and check the code"
        )
    wanted = normalize(code)
    row = db.execute(
        f"select {_CODE} from pairing_codes where code = ? and status = 'pending'", (wanted,)
    ).fetchone()
    if row is None or row[6] <= now:
        db.execute("insert into pairing_failures(at) values (?)", (now,))
        reason = (
            "has expired: ask them to write again for a new one"
            if row is not None
            else "is not a pending code"
        )
        return f"{code.strip()} {reason} (see `temper pairing list`)"
    found = PairingCode(*row)
    db.execute("update pairing_codes set status = 'approved' where code = ?", (wanted,))
    return _grant(db, found.platform, found.platform_user_id, found.user_name, "pairing", now)


def _grant(
    db: apsw.Connection, platform: str, platform_user_id: str, user_name: str | None, via: str, now: float
) -> Grant:
    db.execute(
        "insert into access_grants(platform, platform_user_id, user_name, via, granted_at) values (?, ?, ?, ?, ?)"
        " on conflict(platform, platform_user_id) do update set via = excluded.via, granted_at = excluded.granted_at",
        (platform, platform_user_id, user_name, via, now),
    )
    return Grant(platform, platform_user_id, user_name, via, now)
