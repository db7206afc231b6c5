"""One person across platforms (`store.links`): identities joined to one user, and split again.

Each platform identity (Telegram user 123, Slack member U0AB) maps to one user, and a new
identity gets a user of its own. Linking joins an identity to another user: from then on the
two share facts, recall and profile, because they are one user. Its past comes along:

    link(user, platform, id)     the identity's sessions, their messages and episodes, and the
                                 facts learned from them move to `user`; when that was its old
                                 user's last identity, everything else of the old user moves too
                                 and the old user is deleted
    merge(user, other)           all of `other` (every identity, every row) joins `user`
    unlink(platform, id)         the identity splits off into a new user with what came from it:
                                 its sessions, their messages and episodes, and its facts
    issue_code / redeem          the in-chat flow: /link on one platform gives a one-time code,
                                 sending it from the other identity links that identity
    request / approve / deny     the same with the operator's approval ([users] link_approval):
                                 the code becomes a request (memory/link_requests.py) that
                                 `approve` turns into the same `link`, or `deny` closes

Which rows came from an identity is known through sessions: each session records the identity
it belongs to (`sessions.platform_user_id`, set when it is created; migration m011 filled it in
for older sessions where the user had one identity on that platform). A fact goes where all its
source messages go; a fact learned from messages of both sides is kept by both, each with its
own sources. Supersession never crosses users: a fact whose successor went to the other side is
current again on its own side.

Invariants:
- Every move is one transaction: a failure leaves every row where it was.
- A link code is 8 characters (40 bits, memory/access.py's alphabet), single use, valid for
  `ttl_s`; issuing one revokes the identity's earlier live codes; after FAILURE_LIMIT failed
  redemptions within FAILURE_WINDOW_S, redeeming is refused until the window passes. A code
  used for a request is used: it links nothing until the operator approves, and never twice.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import apsw

from . import link_requests
from .access import ALPHABET, CODE_LENGTH, FAILURE_LIMIT, FAILURE_WINDOW_S, normalize
from .errors import MemoryStoreError, UnknownRecordError
from .link_requests import LinkRequest
from .writer import Writer

CODES_PER_DAY = 10
DAY_S = 86_400.0


class LinkError(MemoryStoreError):
    """A link or unlink that cannot be made: a bad code, or nothing to split."""


@dataclass(frozen=True)
class LinkCode:
    code: str
    user_id: int
    platform: str
    platform_user_id: str
    expires_at: float

    @property
    def display(self) -> str:
        return f"{self.code[:4]}-{self.code[4:]}"


@dataclass(frozen=True)
class _TakenCode:
    code: str
    user_id: int
    lifetime_s: float  # how long the code was valid for when issued


@dataclass
class MoveReport:
    """What a link or unlink moved to `user_id`: rows by table."""

    user_id: int
    moved: dict[str, int] = field(default_factory=dict)
    removed_user: int | None = None  # the user that was left empty and deleted

    def count(self, table: str, rows: int) -> None:
        if rows:
            self.moved[table] = self.moved.get(table, 0) + rows


class Linking:
    """Identities and link codes in the store's database (`store.links`)."""

    def __init__(self, writer: Writer, on_change: Callable[[], None]) -> None:
        self._writer = writer
        self._db = writer.db
        self._on_change = on_change  # users were deleted or identities moved: caches must forget

    def ensure_identity(self, platform: str, platform_user_id: str, display_name: str | None = None) -> int:
        """The user of the identity; a new identity gets the user whose handle is
        `platform:platform_user_id`, created if new."""
        found = _user_of(self._db, platform, platform_user_id)
        if found is not None:
            return found
        with self._writer.writing() as db:
            found = _user_of(db, platform, platform_user_id)
            if found is not None:
                return found
            handle = f"{platform}:{platform_user_id}"
            row = db.execute("select id from users where handle = ?", (handle,)).fetchone()
            if row is None:
                db.execute(
                    "insert into users(handle, display_name, created_at) values (?, ?, ?)",
                    (handle, display_name, time.time()),
                )
            user_id = int(row[0]) if row is not None else db.last_insert_rowid()
            db.execute(
                "insert into identities(platform, platform_user_id, user_id, created_at) values (?, ?, ?, ?)",
                (platform, platform_user_id, user_id, time.time()),
            )
        return user_id

    # --- the in-chat flow ----------------------------------------------------------------------

    def issue_code(self, platform: str, platform_user_id: str, *, ttl_s: float = 600.0) -> LinkCode | None:
        """A one-time code that links whoever sends it to this identity's user; None when the
        identity is unknown or asked too often today."""
        with self._writer.writing() as db:
            user_id = _user_of(db, platform, platform_user_id)
            if user_id is None:
                return None
            now = time.time()
            issued = db.execute(
                "select count(*) from link_codes where platform = ? and platform_user_id = ? and created_at > ?",
                (platform, platform_user_id, now - DAY_S),
            ).fetchone()[0]
            if issued >= CODES_PER_DAY:
                return None
            db.execute(  # one live code per identity: the newest
                "update link_codes set expires_at = ? where platform = ? and platform_user_id = ?"
                " and used_at is null and expires_at > ?",
                (now, platform, platform_user_id, now),
            )
            code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
            db.execute(
                "insert into link_codes(code, user_id, platform, platform_user_id, created_at, expires_at)"
                " values (?, ?, ?, ?, ?, ?)",
                (code, user_id, platform, platform_user_id, now, now + ttl_s),
            )
        return LinkCode(code, user_id, platform, platform_user_id, now + ttl_s)

    def redeem(self, code: str, platform: str, platform_user_id: str) -> MoveReport:
        """Link the identity that sends `code` to the user the code was issued for. LinkError
        (after counting the failed try) for an unknown, used or expired code."""
        with self._writer.writing() as db:
            taken = _take_code(db, code, platform, platform_user_id, time.time())
            if not isinstance(taken, str):
                return self.link(taken.user_id, platform, platform_user_id)
        raise LinkError(taken)  # after the commit: the failed try stays counted

    def request(
        self, code: str, platform: str, platform_user_id: str, display_name: str | None = None
    ) -> LinkRequest:
        """Like `redeem`, but the link waits for the operator: the code is used up and a pending
        request recorded, valid as long as the code was. LinkError as for `redeem`."""
        now = time.time()
        with self._writer.writing() as db:
            taken = _take_code(db, code, platform, platform_user_id, now)
            if not isinstance(taken, str):
                asker = (platform, platform_user_id, display_name)
                return link_requests.record(db, taken.code, taken.user_id, *asker, now, taken.lifetime_s)
        raise LinkError(taken)

    def approve(self, request_id: int) -> tuple[LinkRequest, MoveReport]:
        """Link the request's identity to its user, exactly as `redeem` would have. LinkError
        when the request is unknown, already decided or expired."""
        now = time.time()
        with self._writer.writing() as db:
            request = _open_request(db, request_id, now)
            link_requests.decide(db, request_id, "approved", now)
            report = self.link(request.user_id, request.platform, request.platform_user_id)
        return request, report

    def deny(self, request_id: int) -> LinkRequest:
        """Close the request without linking. LinkError when it is unknown, decided or expired."""
        now = time.time()
        with self._writer.writing() as db:
            request = _open_request(db, request_id, now)
            link_requests.decide(db, request_id, "denied", now)
        return request

    def requests(self, *, include_closed: bool = False) -> list[LinkRequest]:
        """Requests waiting for the operator, oldest first (`include_closed`: all of them)."""
        return link_requests.listed(self._db, time.time(), include_closed=include_closed)

    def latest_request(self, platform: str, platform_user_id: str) -> LinkRequest | None:
        """The newest request this identity made, in whatever state."""
        return link_requests.latest_from(self._db, platform, platform_user_id)

    def prune(self, older_than_s: float) -> int:
        """Forget link codes, failed tries and link requests older than `older_than_s`; how many codes."""
        with self._writer.writing() as db:
            before = time.time() - older_than_s
            db.execute("delete from link_codes where created_at < ?", (before,))
            removed = db.changes()
            db.execute("delete from link_failures where at < ?", (before,))
            db.execute("delete from link_requests where created_at < ?", (before,))
        return removed

    # --- moving identities ---------------------------------------------------------------------

    def link(self, user_id: int, platform: str, platform_user_id: str) -> MoveReport:
        """Make the identity one of `user_id`'s, bringing along what came from it."""
        report = MoveReport(user_id)
        with self._writer.writing() as db:
            _require_user(db, user_id)
            old = _user_of(db, platform, platform_user_id)
            if old == user_id:
                return report
            if old is None:
                db.execute(
                    "insert into identities(platform, platform_user_id, user_id, created_at) values (?, ?, ?, ?)",
                    (platform, platform_user_id, user_id, time.time()),
                )
                report.count("identities", 1)
                return report
            others = db.execute(
                "select count(*) from identities where user_id = ? and not (platform = ? and platform_user_id = ?)",
                (old, platform, platform_user_id),
            ).fetchone()[0]
            if others == 0:  # its user is this identity alone: all of it joins
                self._merge(db, user_id, old, report)
            else:
                self._move_identity(db, old, user_id, platform, platform_user_id, report)
        self._on_change()
        return report

    def merge(self, user_id: int, other_id: int) -> MoveReport:
        """Every identity and every row of user `other_id` joins `user_id`; `other_id` is deleted."""
        report = MoveReport(user_id)
        if other_id == user_id:
            return report
        with self._writer.writing() as db:
            _require_user(db, user_id)
            _require_user(db, other_id)
            self._merge(db, user_id, other_id, report)
        self._on_change()
        return report

    def unlink(self, platform: str, platform_user_id: str) -> MoveReport:
        """Split the identity off its user into a new user (handle `platform:id`) with what came
        from it. LinkError when the identity is unknown or its user's only one."""
        with self._writer.writing() as db:
            old = _user_of(db, platform, platform_user_id)
            if old is None:
                raise LinkError(f"no identity {platform}:{platform_user_id}; `temper users list` shows them")
            others = db.execute("select count(*) from identities where user_id = ?", (old,)).fetchone()[0]
            if others <= 1:
                raise LinkError(
                    f"{platform}:{platform_user_id} is its user's only identity: nothing to split"
                )
            new = _new_user(db, f"{platform}:{platform_user_id}", old)
            report = MoveReport(new)
            self._move_identity(db, old, new, platform, platform_user_id, report)
        self._on_change()
        return report

    def _merge(self, db: apsw.Connection, to: int, old: int, report: MoveReport) -> None:
        moved_messages = [row[0] for row in db.execute("select id from messages where user_id = ?", (old,))]
        for table in ("sessions", "messages", "episodes", "facts", "identities"):
            db.execute(f"update {table} set user_id = ? where user_id = ?", (to, old))
            report.count(table, db.changes())
        _move_vectors(db, moved_messages, to)
        # requests waiting to join `old` now join `to` (deleting `old` would cascade them away)
        db.execute("update link_requests set user_id = ? where user_id = ?", (to, old))
        db.execute("delete from users where id = ?", (old,))
        report.removed_user = old

    def _move_identity(
        self, db: apsw.Connection, old: int, to: int, platform: str, platform_user_id: str, report: MoveReport
    ) -> None:
        sessions = [
            row[0]
            for row in db.execute(
                "select id from sessions where user_id = ? and platform = ? and platform_user_id = ?",
                (old, platform, platform_user_id),
            )
        ]
        marks = ", ".join("?" * len(sessions))
        messages: list[int] = []
        if sessions:
            messages = [
                row[0]
                for row in db.execute(
                    f"select id from messages where user_id = ? and session_id in ({marks})", (old, *sessions)
                )
            ]
            for table in ("sessions", "messages", "episodes"):
                column = "id" if table == "sessions" else "session_id"
                db.execute(
                    f"update {table} set user_id = ? where user_id = ? and {column} in ({marks})",
                    (to, old, *sessions),
                )
                report.count(table, db.changes())
        report.count("facts", _split_facts(db, old, to, messages))
        db.execute(
            "update identities set user_id = ? where platform = ? and platform_user_id = ?",
            (to, platform, platform_user_id),
        )
        report.count("identities", 1)
        db.execute(
            "delete from link_codes where platform = ? and platform_user_id = ?", (platform, platform_user_id)
        )
        _move_vectors(db, messages, to)


def _take_code(
    db: apsw.Connection, code: str, platform: str, platform_user_id: str, now: float
) -> _TakenCode | str:
    """Use up a valid code sent by the identity; what is wrong with it (the try counted) if not."""
    recent = db.execute("select count(*) from link_failures where at > ?", (now - FAILURE_WINDOW_S,))
    if recent.fetchone()[0] >= FAILURE_LIMIT:
        return f"too many wrong link codes lately; wait {FAILURE_WINDOW_S / 60:.0f} minutes"
    row = db.execute(
        "select user_id, platform, platform_user_id, created_at, expires_at, used_at from link_codes"
        " where code = ?",
        (normalize(code),),
    ).fetchone()
    if row is None or row[5] is not None or row[4] <= now:
        db.execute("insert into link_failures(at) values (?)", (now,))
        return "that link code is unknown, used or expired: send /link on your other account for a new one"
    user_id, issuer_platform, issuer_id, created_at, expires_at = row[:5]
    if (issuer_platform, issuer_id) == (platform, platform_user_id):
        return "send this code from your other account, not from the one that asked for it"
    db.execute("update link_codes set used_at = ? where code = ?", (now, normalize(code)))
    return _TakenCode(normalize(code), user_id, expires_at - created_at)


def _open_request(db: apsw.Connection, request_id: int, now: float) -> LinkRequest:
    """The request, still waiting for a decision; LinkError saying why it cannot be decided."""
    request = link_requests.get(db, request_id)
    if request is None:
        raise LinkError(f"no link request #{request_id}; `temper users requests` lists the pending ones")
    state = request.state(now)
    if state == "expired":
        raise LinkError(
            f"link request #{request_id} expired; {request.identity} can send /link on the other"
            " account for a new code"
        )
    if state != "pending":
        raise LinkError(f"link request #{request_id} was already {state}")
    return request


def _split_facts(db: apsw.Connection, old: int, to: int, messages: Collection[int]) -> int:
    """Facts of `old` learned from `messages` go to `to`: moved when all their sources are in
    `messages`, copied (with those sources) when only some are. Returns how many went."""
    if not messages:
        return 0
    moved = set(messages)
    rows = db.execute(
        "select f.id, group_concat(s.message_id) from facts f join fact_sources s on s.fact_id = f.id"
        " where f.user_id = ? group by f.id",
        (old,),
    ).fetchall()
    went = 0
    for fact_id, concatenated in rows:
        sources = {int(part) for part in concatenated.split(",")}
        ours = sources & moved
        if not ours:
            continue
        went += 1
        if ours == sources:
            db.execute("update facts set user_id = ? where id = ?", (to, fact_id))
            continue
        db.execute(
            "insert into facts(user_id, statement, kind, source_message_id, confidence, mentions, created_at,"
            " updated_at) select ?, statement, kind, ?, confidence, mentions, created_at, updated_at"
            " from facts where id = ?",
            (to, min(ours), fact_id),
        )
        copy = db.last_insert_rowid()
        marks = ", ".join("?" * len(ours))
        db.execute(
            f"update fact_sources set fact_id = ? where fact_id = ? and message_id in ({marks})",
            (copy, fact_id, *ours),
        )
        db.execute(
            "update facts set source_message_id = (select min(message_id) from fact_sources where fact_id = ?)"
            " where id = ?",
            (fact_id, fact_id),
        )
    for column in ("superseded_by", "supersedes"):  # history never points across users
        db.execute(
            f"update facts set {column} = null where user_id in (?, ?) and {column} is not null"
            f" and (select other.user_id from facts other where other.id = facts.{column}) != facts.user_id",
            (old, to),
        )
    return went


def _move_vectors(db: apsw.Connection, messages: list[int], to: int) -> None:
    """Hybrid search's vectors (memory/hybrid.py) are partitioned by user: moved messages'
    vectors move partition (sqlite-vec cannot update a partition key: delete, insert)."""
    if not messages or not _has_table(db, "message_vectors"):
        return
    from .embedding import load_vec_extension

    load_vec_extension(db)
    for start in range(0, len(messages), 500):
        chunk = messages[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows = db.execute(
            f"select rowid, embedding from message_vectors where rowid in ({marks})", chunk
        ).fetchall()
        db.execute(f"delete from message_vectors where rowid in ({marks})", chunk)
        db.executemany(
            "insert into message_vectors(rowid, user_id, embedding) values (?, ?, ?)",
            [(rowid, to, embedding) for rowid, embedding in rows],
        )


def _has_table(db: apsw.Connection, name: str) -> bool:
    return db.execute("select 1 from sqlite_schema where name = ?", (name,)).fetchone() is not None


def _user_of(db: apsw.Connection, platform: str, platform_user_id: str) -> int | None:
    row = db.execute(
        "select user_id from identities where platform = ? and platform_user_id = ?",
        (platform, platform_user_id),
    ).fetchone()
    return None if row is None else row[0]


def _require_user(db: apsw.Connection, user_id: int) -> None:
    if db.execute("select 1 from users where id = ?", (user_id,)).fetchone() is None:
        raise UnknownRecordError(f"no user with id {user_id}")


def _new_user(db: apsw.Connection, handle: str, like: int) -> int:
    """A new user called `handle` (or `handle#2`, ... if taken), named like user `like`."""
    name = db.execute("select display_name from users where id = ?", (like,)).fetchone()[0]
    candidate, n = handle, 1
    while db.execute("select 1 from users where handle = ?", (candidate,)).fetchone() is not None:
        n += 1
        candidate = f"{handle}#{n}"
    db.execute(
        "insert into users(handle, display_name, created_at) values (?, ?, ?)", (candidate, name, time.time())
    )
    return db.last_insert_rowid()
