"""Link requests: in-chat links waiting for the operator (`[users] link_approval = "operator"`).

With operator approval, a valid /link code sent from another account does not link at once
(memory/linking.py `Linking.request`): the code is used up and a request is recorded, naming
the user the code was issued for and the identity that sent it. `temper users approve ID` then
links exactly as an immediate redeem would (`Linking.link`); `deny ID` closes it. This module
holds the rows; the decisions are made in linking.py.

Invariants:
- One request per code (`code` is unique), so a code yields one request at most.
- A request lives as long as its code did: the code's TTL, counted from the redeem. Undecided
  past that it is expired, and an expired or decided request can never be approved.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import apsw

State = Literal["pending", "approved", "denied", "expired"]

_COLUMNS = (
    "r.id, r.code, r.user_id, u.handle, r.platform, r.platform_user_id, r.display_name, r.created_at,"
    " r.expires_at, r.decision, r.decided_at"
)


@dataclass(frozen=True)
class LinkRequest:
    """An identity (platform, platform_user_id) asking to join user `user_id` (`user_handle`)."""

    id: int
    code: str
    user_id: int
    user_handle: str
    platform: str
    platform_user_id: str
    display_name: str | None
    created_at: float
    expires_at: float
    decision: Literal["approved", "denied"] | None
    decided_at: float | None

    @property
    def identity(self) -> str:
        return f"{self.platform}:{self.platform_user_id}"

    def state(self, now: float | None = None) -> State:
        if self.decision is not None:
            return self.decision
        return "expired" if self.expires_at <= (time.time() if now is None else now) else "pending"


def record(
    db: apsw.Connection,
    code: str,
    user_id: int,
    platform: str,
    platform_user_id: str,
    display_name: str | None,
    now: float,
    lifetime_s: float,
) -> LinkRequest:
    db.execute(
        "insert into link_requests(code, user_id, platform, platform_user_id, display_name, created_at,"
        " expires_at) values (?, ?, ?, ?, ?, ?, ?)",
        (code, user_id, platform, platform_user_id, display_name, now, now + lifetime_s),
    )
    found = get(db, db.last_insert_rowid())
    assert found is not None  # just inserted, in this transaction
    return found


def get(db: apsw.Connection, request_id: int) -> LinkRequest | None:
    row = db.execute(
        f"select {_COLUMNS} from link_requests r join users u on u.id = r.user_id where r.id = ?",
        (request_id,),
    ).fetchone()
    return None if row is None else LinkRequest(*row)


def listed(db: apsw.Connection, now: float, *, include_closed: bool = False) -> list[LinkRequest]:
    """Pending requests, oldest first; with `include_closed`, decided and expired ones too."""
    rows = db.execute(
        f"select {_COLUMNS} from link_requests r join users u on u.id = r.user_id"
        " where ? or (r.decision is null and r.expires_at > ?) order by r.id",
        (include_closed, now),
    ).fetchall()
    return [LinkRequest(*row) for row in rows]


def latest_from(db: apsw.Connection, platform: str, platform_user_id: str) -> LinkRequest | None:
    """The newest request that identity made."""
    row = db.execute(
        f"select {_COLUMNS} from link_requests r join users u on u.id = r.user_id"
        " where r.platform = ? and r.platform_user_id = ? order by r.id desc limit 1",
        (platform, platform_user_id),
    ).fetchone()
    return None if row is None else LinkRequest(*row)


def decide(db: apsw.Connection, request_id: int, decision: Literal["approved", "denied"], now: float) -> None:
    db.execute(
        "update link_requests set decision = ?, decided_at = ? where id = ? and decision is null",
        (decision, now, request_id),
    )
