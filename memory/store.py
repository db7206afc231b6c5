"""MemoryStore: temper's one SQLite database, its users, sessions and messages, and search.

The store opens the database (applying pending migrations) and owns its one connection and
its one writer path (writer.py): every write is a transaction, one per logical write, and
`transaction()` makes several writes one logical write (the agent's turn start, its reply):
the writes inside join it instead of committing each. Each further concern has its own object
on the same connection and writer, reached as an attribute:

    store.conversations   a session's turns and summaries as the model sees them (conversation.py)
    store.episodes        the tasks of chat turns, their outcomes and rewards (episodes.py)
    store.facts           what temper has learned about each user (facts.py)
    store.users           the people it knows: list, resolve, export, forget (users.py)
    store.links           one person's identities joined and split again (linking.py)
    store.trajectories    executor episodes and their model calls at token level (trajectories.py)
    store.inbox           the daemon's durable inbox and the replies it sends (inbox.py)
    store.access          pairing codes and access grants (access.py)
    store.routing         kinds of terminal tasks, executor competence, routing decisions (routing.py)
    store.skills          the skill index: search, which turns used which skill, outcomes (skill_index.py)

The store is synchronous on purpose: its calls take micro- to milliseconds, and SQLite wants
one connection used by one thread at a time. Async callers run long operations (import,
maintenance) with `asyncio.to_thread`.
"""

import time
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw

from . import maintenance, search
from .access import Access
from .conversation import Conversations, ToolCallRecord, encode_tool_calls
from .database import connect
from .episodes import Episodes
from .errors import UnknownRecordError
from .facts import Facts
from .inbox import Inbox
from .linking import Linking
from .migrations import migrate
from .recent_ids import RecentIds
from .records import ROLES, AddReport, MemoryStats, Message, NewMessage, SearchHit, SessionInfo
from .routing import Routing
from .scope import NO_SUCH_ID, Scope
from .skill_index import SkillIndex
from .trajectories import Trajectories
from .users import Users
from .writer import Writer

_MESSAGE_COLUMNS = (
    "m.id, m.external_id, s.key, u.handle, m.role, m.content, m.ts"
    " from messages m join sessions s on s.id = m.session_id join users u on u.id = m.user_id"
)


class MemoryStore:
    def __init__(self, db: apsw.Connection, path: Path | None) -> None:
        self.db = db
        self.path = path
        self._user_ids = RecentIds()
        self._session_ids = RecentIds()
        self._writer = Writer(db, on_rollback=self._forget_ids)
        self.conversations = Conversations(self._writer)
        self.episodes = Episodes(self._writer)
        self.facts = Facts(self._writer)
        self.trajectories = Trajectories(self._writer, self.episodes)
        self.inbox = Inbox(self._writer)
        self.access = Access(self._writer)
        self.routing = Routing(self._writer)
        self.skills = SkillIndex(self._writer)
        self.users = Users(self._writer, path, on_change=self._forget_ids)
        self.links = Linking(self._writer, on_change=self._forget_ids)

    @classmethod
    def open(cls, path: Path | str) -> "MemoryStore":
        """Open the database at `path`, creating it and applying pending migrations."""
        db = connect(path)
        migrate(db)
        return cls(db, None if str(path) == ":memory:" else Path(path))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "MemoryStore":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction for every write inside: an error that leaves the block rolls them
        all back."""
        with self._writer.writing():
            yield

    def _forget_ids(self) -> None:
        # Ids handed out inside a rolled-back transaction no longer exist.
        self._user_ids.clear()
        self._session_ids.clear()

    # --- users, identities, sessions -------------------------------------------------

    def ensure_user(self, handle: str, display_name: str | None = None) -> int:
        """The id of the user called `handle`, created if new."""
        if (cached := self._user_ids.get_recent(handle)) is not None:
            return cached
        with self._writer.writing() as db:
            row = db.execute("select id from users where handle = ?", (handle,)).fetchone()
            if row is None:
                db.execute(
                    "insert into users(handle, display_name, created_at) values (?, ?, ?)",
                    (handle, display_name, time.time()),
                )
                user_id = db.last_insert_rowid()
            else:
                user_id = row[0]
            self._user_ids.put(handle, user_id)
        return user_id

    def user_handle(self, user_id: int) -> str:
        row = self.db.execute("select handle from users where id = ?", (user_id,)).fetchone()
        if row is None:
            raise UnknownRecordError(f"no user with id {user_id}")
        return row[0]

    def user_id(self, handle: str) -> int | None:
        row = self.db.execute("select id from users where handle = ?", (handle,)).fetchone()
        return None if row is None else row[0]

    def link_identity(self, platform: str, platform_user_id: str, user_id: int) -> None:
        """Make `platform_user_id` on `platform` one of `user_id`'s identities."""
        with self._writer.writing() as db:
            db.execute(
                "insert into identities(platform, platform_user_id, user_id, created_at)"
                " values (?, ?, ?, ?) on conflict(platform, platform_user_id)"
                " do update set user_id = excluded.user_id",
                (platform, platform_user_id, user_id, time.time()),
            )

    def user_for_identity(self, platform: str, platform_user_id: str) -> int | None:
        row = self.db.execute(
            "select user_id from identities where platform = ? and platform_user_id = ?",
            (platform, platform_user_id),
        ).fetchone()
        return None if row is None else row[0]

    def ensure_session(
        self,
        key: str,
        *,
        platform: str = "import",
        chat_id: str | None = None,
        thread_id: str = "",
        user_id: int | None = None,
        platform_user_id: str | None = None,
    ) -> int:
        """The id of the session named `key`, created if new; `platform_user_id` is the identity
        it belongs to on `platform` (linking.py splits a person's sessions by it)."""
        if (cached := self._session_ids.get_recent(key)) is not None:
            return cached
        with self._writer.writing() as db:
            row = db.execute("select id from sessions where key = ?", (key,)).fetchone()
            if row is None:
                now = time.time()
                db.execute(
                    "insert into sessions(key, platform, chat_id, thread_id, user_id, platform_user_id,"
                    " created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        key, platform, chat_id if chat_id is not None else key, thread_id, user_id,
                        platform_user_id, now, now,
                    ),
                )  # fmt: skip
                session_id = db.last_insert_rowid()
            else:
                session_id = row[0]
                if platform_user_id is not None:
                    db.execute(
                        "update sessions set platform_user_id = ? where id = ? and platform_user_id is null",
                        (platform_user_id, session_id),
                    )
            self._session_ids.put(key, session_id)
        return session_id

    def sessions_for(self, user_id: int, platform: str | None = None, limit: int = 20) -> list[SessionInfo]:
        """The user's sessions (on `platform`, if given), most recently used first."""
        rows = self.db.execute(
            "select s.key, s.chat_id, s.updated_at,"
            " (select count(*) from messages m where m.session_id = s.id),"
            " (select m.content from messages m where m.session_id = s.id and m.role = 'user'"
            "  order by m.id limit 1)"
            " from sessions s where s.user_id = ? and (? is null or s.platform = ?)"
            " order by s.updated_at desc limit ?",
            (user_id, platform, platform, limit),
        ).fetchall()
        return [SessionInfo(*row) for row in rows]

    def workspace_snapshot(self, session_id: int) -> str | None:
        row = self.db.execute(
            "select workspace_snapshot from sessions where id = ?", (session_id,)
        ).fetchone()
        return None if row is None else row[0]

    def set_workspace_snapshot(self, session_id: int, snapshot_id: str) -> None:
        with self._writer.writing() as db:
            db.execute("update sessions set workspace_snapshot = ? where id = ?", (snapshot_id, session_id))

    def session_id(self, key: str) -> int | None:
        row = self.db.execute("select id from sessions where key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    # --- messages -----------------------------------------------------------------------

    def add_message(
        self,
        *,
        session_id: int,
        user_id: int,
        role: str,
        content: str,
        ts: float | None = None,
        external_id: str | None = None,
        tool_calls: list[ToolCallRecord] | tuple[ToolCallRecord, ...] = (),
        tool_call_id: str | None = None,
    ) -> int:
        """Store one message; return its id (the existing one if `external_id` is known).

        `tool_calls` (assistant messages) and `tool_call_id` (tool results) keep a session
        resumable exactly as the model saw it.
        """
        _check_role(role)
        with self._writer.writing() as db:
            if external_id is not None:
                row = db.execute("select id from messages where external_id = ?", (external_id,)).fetchone()
                if row is not None:
                    return row[0]
            db.execute(
                "insert into messages(session_id, user_id, role, content, ts, external_id,"
                " tool_calls, tool_call_id) values (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id, user_id, role, content, time.time() if ts is None else ts,
                    external_id, encode_tool_calls(tool_calls), tool_call_id,
                ),
            )  # fmt: skip
            message_id = db.last_insert_rowid()
            db.execute("update sessions set updated_at = ? where id = ?", (time.time(), session_id))
        return message_id

    def add_messages(self, messages: Iterable[NewMessage]) -> AddReport:
        """Store many messages in one transaction; known external ids are skipped.

        Rows go first into a temporary table, then into `messages` with one INSERT ...
        SELECT: FTS5 flushes its in-memory index at every statement savepoint, so a
        trigger fired by one statement per row writes a tiny segment per row (measured:
        3x slower than one statement for the batch).
        """
        with self._writer.writing() as db:
            rows = []
            for message in messages:
                _check_role(message.role)
                user_id = self.ensure_user(message.user)  # joins this transaction
                session_id = self.ensure_session(message.session, user_id=user_id)
                rows.append(
                    (session_id, user_id, message.role, message.content, message.ts, message.external_id)
                )
            db.execute(
                "create temp table if not exists message_batch"
                " (session_id, user_id, role, content, ts, external_id)"
            )
            db.executemany("insert into temp.message_batch values (?, ?, ?, ?, ?, ?)", rows)
            # OR IGNORE only ever meets the external-id uniqueness: roles were checked above
            # and every other column is filled by us.
            db.execute(
                "insert or ignore into messages(session_id, user_id, role, content, ts, external_id)"
                " select * from temp.message_batch order by rowid"
            )
            added = db.changes()
            db.execute("delete from temp.message_batch")
        return AddReport(added=added, duplicates=len(rows) - added)

    def update_message(self, message_id: int, content: str) -> None:
        with self._writer.writing() as db:
            db.execute("update messages set content = ? where id = ?", (content, message_id))
            if db.changes() == 0:
                raise UnknownRecordError(f"no message with id {message_id}")

    def delete_message(self, message_id: int) -> None:
        with self._writer.writing() as db:
            db.execute("delete from messages where id = ?", (message_id,))
            if db.changes() == 0:
                raise UnknownRecordError(f"no message with id {message_id}")

    def get_message(self, message_id: int) -> Message:
        row = self.db.execute(f"select {_MESSAGE_COLUMNS} where m.id = ?", (message_id,)).fetchone()
        if row is None:
            raise UnknownRecordError(f"no message with id {message_id}")
        return Message(*row)

    def recent_messages(self, session_id: int, limit: int = 20) -> list[Message]:
        """The session's last `limit` messages, oldest first."""
        rows = self.db.execute(
            f"select {_MESSAGE_COLUMNS} where m.session_id = ? order by m.id desc limit ?",
            (session_id, limit),
        ).fetchall()
        return [Message(*row) for row in reversed(rows)]

    def iter_messages(self, batch: int = 5_000) -> Iterator[Message]:
        """Every message in id order, read in batches (for export)."""
        last = 0
        while True:
            rows = self.db.execute(
                f"select {_MESSAGE_COLUMNS} where m.id > ? order by m.id limit ?", (last, batch)
            ).fetchall()
            if not rows:
                return
            yield from (Message(*row) for row in rows)
            last = rows[-1][0]

    # --- search and maintenance -------------------------------------------------------------

    def search(
        self,
        text: str,
        *,
        user: str | None = None,
        all_users: bool = False,
        session: str | None = None,
        role: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 10,
    ) -> list[SearchHit]:
        """Messages that answer `text`, best first; see search.py for how.

        Scoped to `user` unless `all_users` is set: forgetting the scope is an error, not a
        leak of other people's messages.
        """
        if user is None and not all_users:
            raise ValueError("search needs user=... (or all_users=True for an operator search)")
        if role is not None:
            _check_role(role)
        scope = Scope(
            user_id=self._id_or_missing("users", "handle", user),
            session_id=self._id_or_missing("sessions", "key", session),
            role=role,
            since=since,
            until=until,
        )
        return search.search_messages(self.db, text, scope, limit)

    def has_messages_outside(self, user_id: int, ids: Collection[int]) -> bool:
        """Whether the user has a stored message whose id is not in `ids` (cheap: a search that
        could only find messages in `ids` need not run)."""
        return search.has_messages_outside(self.db, user_id, ids)

    def _id_or_missing(self, table: str, column: str, value: str | None) -> int | None:
        if value is None:
            return None
        row = self.db.execute(f"select id from {table} where {column} = ?", (value,)).fetchone()
        return NO_SUCH_ID if row is None else row[0]

    def stats(self) -> MemoryStats:
        return maintenance.stats(self.db, self.path)

    def maintain(self) -> dict[str, float]:
        """FTS optimize, WAL checkpoint, incremental vacuum; returns seconds per step."""
        with self._writer.lock:
            return maintenance.maintain(self.db)

    def merge_segments(self) -> dict[str, int]:
        """A bounded merge step on the search indexes (memory/maintenance.py); the segments
        each has left."""
        with self._writer.writing() as db:
            return maintenance.merge_segments(db)


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}; got {role!r}")
