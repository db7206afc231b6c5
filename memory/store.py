"""MemoryStore: temper's one SQLite database, and its one writer path.

Every write goes through `_writing()`: a lock (one writer per process) around an apsw
transaction (`BEGIN IMMEDIATE`, so a second process waits on the busy timeout instead of
failing half way). A logical write is one transaction; a crash mid-transaction leaves the
database as it was before it. `transaction()` makes several writes one logical write (the
agent's turn start, its reply): the writes inside join it instead of committing each.

The store is synchronous on purpose: its calls take micro- to milliseconds, and SQLite wants
one connection used by one thread at a time. Async callers run long operations (import,
maintenance) with `asyncio.to_thread`.
"""

from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
import threading
import time

import apsw

from . import access, conversation, episodes, inbox, maintenance, search, trajectories
from .conversation import Summary, ToolCallRecord, Turn, encode_tool_calls
from .database import connect
from .episodes import Episode
from .access import Grant, PairingCode, PairingError
from .errors import UnknownRecordError
from .inbox import InboxDepth, InboxItem, Reply
from .migrations import migrate
from .records import ROLES, AddReport, Fact, MemoryStats, Message, NewMessage, SearchHit, SessionInfo
from .trajectory_records import (
    ExecutorEpisode,
    RecordedCall,
    StoredCall,
    Trajectory,
    TrajectoryFilter,
    TrajectorySummary,
)

_MESSAGE_COLUMNS = (
    "m.id, m.external_id, s.key, u.handle, m.role, m.content, m.ts"
    " from messages m join sessions s on s.id = m.session_id join users u on u.id = m.user_id"
)


ID_CACHE_SIZE = 4096  # recently used handles and session keys; a daemon's memory stays flat


class _RecentIds(OrderedDict[str, int]):
    """Ids by name, forgetting the least recently used beyond `ID_CACHE_SIZE`."""

    def get_recent(self, name: str) -> int | None:
        found = self.get(name)
        if found is not None:
            self.move_to_end(name)
        return found

    def put(self, name: str, value: int) -> None:
        self[name] = value
        self.move_to_end(name)
        if len(self) > ID_CACHE_SIZE:
            self.popitem(last=False)


class MemoryStore:
    def __init__(self, db: apsw.Connection, path: Path | None) -> None:
        self.db = db
        self.path = path
        self._write_lock = threading.RLock()
        self._depth = 0  # writes open on the holding thread: only the outermost commits
        self._user_ids = _RecentIds()
        self._session_ids = _RecentIds()
        self._trajectories = trajectories.TrajectoryLog()

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
        with self._writing():
            yield

    @contextmanager
    def _writing(self) -> Iterator[apsw.Connection]:
        with self._write_lock:
            if self._depth:  # inside transaction(): its commit or rollback covers this write
                self._depth += 1
                try:
                    yield self.db
                finally:
                    self._depth -= 1
                return
            self.db.execute("begin immediate")
            self._depth = 1
            try:
                yield self.db
            except BaseException:
                self.db.execute("rollback")
                # Ids handed out inside the rolled-back transaction no longer exist.
                self._user_ids.clear()
                self._session_ids.clear()
                raise
            finally:
                self._depth = 0
            self.db.execute("commit")

    # --- users, identities, sessions -------------------------------------------------

    def ensure_user(self, handle: str, display_name: str | None = None) -> int:
        """The id of the user called `handle`, created if new."""
        if (cached := self._user_ids.get_recent(handle)) is not None:
            return cached
        with self._writing() as db:
            user_id = self._ensure_user_in(db, handle, display_name)
        return user_id

    def _ensure_user_in(self, db: apsw.Connection, handle: str, display_name: str | None = None) -> int:
        if (cached := self._user_ids.get_recent(handle)) is not None:
            return cached
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
        with self._writing() as db:
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
    ) -> int:
        """The id of the session named `key`, created if new."""
        if (cached := self._session_ids.get_recent(key)) is not None:
            return cached
        with self._writing() as db:
            session_id = self._ensure_session_in(db, key, platform, chat_id, thread_id, user_id)
        return session_id

    def _ensure_session_in(
        self,
        db: apsw.Connection,
        key: str,
        platform: str = "import",
        chat_id: str | None = None,
        thread_id: str = "",
        user_id: int | None = None,
    ) -> int:
        if (cached := self._session_ids.get_recent(key)) is not None:
            return cached
        row = db.execute("select id from sessions where key = ?", (key,)).fetchone()
        if row is None:
            now = time.time()
            db.execute(
                "insert into sessions(key, platform, chat_id, thread_id, user_id, created_at,"
                " updated_at) values (?, ?, ?, ?, ?, ?, ?)",
                (key, platform, chat_id if chat_id is not None else key, thread_id, user_id, now, now),
            )
            session_id = db.last_insert_rowid()
        else:
            session_id = row[0]
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
        with self._writing() as db:
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
        with self._writing() as db:
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
        with self._writing() as db:
            rows = []
            for message in messages:
                _check_role(message.role)
                user_id = self._ensure_user_in(db, message.user)
                session_id = self._ensure_session_in(db, message.session, user_id=user_id)
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
        with self._writing() as db:
            db.execute("update messages set content = ? where id = ?", (content, message_id))
            if db.changes() == 0:
                raise UnknownRecordError(f"no message with id {message_id}")

    def delete_message(self, message_id: int) -> None:
        with self._writing() as db:
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

    # --- conversations and episodes ---------------------------------------------------

    def conversation(self, session_id: int, limit: int | None = None) -> tuple[Summary | None, list[Turn]]:
        """The latest summary of the session and the newest `limit` turns after it."""
        summary = conversation.latest_summary(self.db, session_id)
        after = 0 if summary is None else summary.through_message_id
        return summary, conversation.turns_after(self.db, session_id, after, limit)

    def history_chars(self, session_id: int) -> int:
        """Characters of the turns after the session's latest summary."""
        summary = conversation.latest_summary(self.db, session_id)
        return conversation.chars_after(
            self.db, session_id, 0 if summary is None else summary.through_message_id
        )

    def add_summary(self, session_id: int, through_message_id: int, text: str) -> None:
        """Let `text` stand in for the session's turns up to `through_message_id`."""
        with self._writing() as db:
            conversation.add_summary(db, session_id, through_message_id, text, time.time())

    def start_episode(
        self, session_id: int, user_id: int, task: str, request_message_id: int | None = None
    ) -> int:
        with self._writing() as db:
            return episodes.start(db, session_id, user_id, task, request_message_id, time.time())

    def finish_episode(self, episode_id: int, status: str, reply_message_id: int | None = None) -> None:
        with self._writing() as db:
            episodes.finish(db, episode_id, status, reply_message_id, time.time())

    def record_reward(self, episode_id: int, reward: float, source: str, reason: str = "") -> bool:
        """Store a reward unless a higher-ranked source gave one (user > verifier > judge)."""
        with self._writing() as db:
            return episodes.record_reward(db, episode_id, reward, source, reason)

    def episode(self, episode_id: int) -> Episode:
        found = episodes.get(self.db, episode_id)
        if found is None:
            raise UnknownRecordError(f"no episode with id {episode_id}")
        return found

    def latest_episode(self, session_id: int) -> Episode | None:
        return episodes.latest_in_session(self.db, session_id)

    # --- executor trajectories (trajectories.py) -------------------------------------------

    def set_secrets(self, secrets: Iterable[str]) -> None:
        """Configured secrets (API keys, bot tokens) to redact from trajectory text from now on."""
        self._trajectories = trajectories.TrajectoryLog(tuple(secrets))

    def start_executor_episode(
        self,
        task: str,
        *,
        split: str = "live",
        group_id: str | None = None,
        sandbox_backend: str | None = None,
        snapshot_id: str | None = None,
        snapshot_bytes: int | None = None,
        verifier: str | None = None,
        session_id: int | None = None,
        user_id: int | None = None,
        parent_episode_id: int | None = None,
    ) -> int:
        """A new running executor episode for `task` (the query); returns its id."""
        with self._writing() as db:
            return trajectories.start_executor_episode(
                db, self._trajectories.redactor, time.time(), task, split=split, group_id=group_id,
                sandbox_backend=sandbox_backend, snapshot_id=snapshot_id, snapshot_bytes=snapshot_bytes,
                verifier=verifier, session_id=session_id, user_id=user_id, parent_episode_id=parent_episode_id,
            )  # fmt: skip

    def record_call(self, episode_id: int, call: StoredCall) -> int:
        """Store one model call of the episode (next index, one transaction); returns its id."""
        with self._writing() as db:
            call_id, tail = trajectories.record_call(db, self._trajectories, episode_id, call, time.time())
        self._trajectories.remember(episode_id, call.role, tail)
        return call_id

    def calls(self, episode_id: int) -> list[RecordedCall]:
        """The episode's calls in order, prompt_ids rebuilt in full."""
        return trajectories.calls(self.db, episode_id)

    def executor_episode(self, episode_id: int) -> ExecutorEpisode:
        return trajectories.episode(self.db, episode_id)

    def finish_executor_episode(
        self, episode_id: int, status: str, *, parse_failures: int, timeouts: int
    ) -> None:
        """End an executor episode, with how often its model wrote no valid action and how many
        of its commands timed out (the promotion gate compares both)."""
        with self._writing() as db:
            episodes.finish(db, episode_id, status, None, time.time())
            db.execute(
                "update episodes set parse_failures = ?, timeouts = ? where id = ?",
                (parse_failures, timeouts, episode_id),
            )

    def heldout_success(
        self, model: str, adapter_version: str | None = None, last: int = 200
    ) -> float | None:
        """Mean reward of the newest `last` scored held-out executor episodes that `model` (with
        `adapter_version`) ran; None when it has none yet. Routing reads this."""
        row = self.db.execute(
            "select avg(reward), count(*) from (select e.reward from episodes e"
            " where e.kind = 'executor' and e.split = 'heldout' and e.reward is not null"
            " and exists (select 1 from model_calls c where c.episode_id = e.id and c.model = ?"
            "  and c.adapter_version is ?)"
            " order by e.id desc limit ?)",
            (model, adapter_version, last),
        ).fetchone()
        return None if row[1] == 0 else row[0]

    def mark_secret(self, episode_id: int) -> None:
        """Keep the episode out of training data and exports: its tokens may hold a secret."""
        with self._writing() as db:
            trajectories.mark_secret(db, episode_id)

    def trajectories(
        self, *, since: float | None = None, until: float | None = None, min_reward: float | None = None,
        split: str | None = None, limit: int | None = None,
    ) -> Iterator[Trajectory]:  # fmt: skip
        """Executor episodes with their calls, oldest first, secret-marked ones left out."""
        return trajectories.trajectories(self.db, TrajectoryFilter(since, until, min_reward, split, limit))

    def trajectory_summaries(
        self, *, since: float | None = None, until: float | None = None, min_reward: float | None = None,
        split: str | None = None, limit: int | None = 20,
    ) -> list[TrajectorySummary]:  # fmt: skip
        """The newest executor episodes with call and token counts, secret-marked ones flagged."""
        return trajectories.summaries(self.db, TrajectoryFilter(since, until, min_reward, split, limit))

    def secret_marked_count(
        self, *, since: float | None = None, until: float | None = None, min_reward: float | None = None,
        split: str | None = None,
    ) -> int:  # fmt: skip
        """How many executor episodes passing the filters are kept out for holding a secret."""
        return trajectories.secret_marked(self.db, TrajectoryFilter(since, until, min_reward, split))

    def prefix_mismatches(self, *, since: float | None = None, until: float | None = None) -> dict[str, int]:
        """Calls whose prompt did not extend the previous call's prompt + completion, by cause."""
        return trajectories.mismatch_counts(self.db, TrajectoryFilter(since, until))

    # --- facts ----------------------------------------------------------------------------

    def add_fact(
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
        with self._writing() as db:
            db.execute(
                "insert into facts(user_id, statement, source_message_id, confidence, created_at,"
                " updated_at) values (?, ?, ?, ?, ?, ?)",
                (user_id, statement, source_message_id, confidence, now, now),
            )
            return db.last_insert_rowid()

    def facts_for(self, user_id: int) -> list[Fact]:
        rows = self.db.execute(
            "select id, user_id, statement, source_message_id, confidence, created_at, updated_at"
            " from facts where user_id = ? order by updated_at desc",
            (user_id,),
        ).fetchall()
        return [Fact(*row) for row in rows]

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
        scope = search.Scope(
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
        return search.NO_SUCH_ID if row is None else row[0]

    def stats(self) -> MemoryStats:
        return maintenance.stats(self.db, self.path)

    def maintain(self) -> dict[str, float]:
        """FTS optimize, WAL checkpoint, incremental vacuum; returns seconds per step."""
        with self._write_lock:
            return maintenance.maintain(self.db)

    # --- the daemon's inbox and replies (inbox.py) ------------------------------------------

    def add_inbox_item(self, platform: str, event_id: str, kind: str, lane: str, payload: str) -> int | None:
        """Store a delivered item durably; its id, or None if (platform, event_id) is known."""
        with self._writing() as db:
            return inbox.add(db, platform, event_id, kind, lane, payload, time.time())

    def inbox_heads(
        self, *, kinds: Collection[str], platforms: Collection[str], busy_lanes: Collection[str], limit: int
    ) -> list[InboxItem]:
        """The next due item of each idle lane, oldest first (see inbox.py)."""
        return inbox.heads(
            self.db, kinds=kinds, platforms=platforms, busy_lanes=busy_lanes, now=time.time(), limit=limit
        )

    def inbox_next_due(self) -> float | None:
        return inbox.next_due(self.db)

    def defer_inbox_item(self, item_id: int, delay_s: float, error: str, max_attempts: int) -> bool:
        """Try the item again after `delay_s`; True when it has now failed for good."""
        with self._writing() as db:
            return inbox.defer(db, item_id, delay_s, error, time.time(), max_attempts)

    def finish_inbox_item(self, item_id: int, status: str) -> None:
        """Finish an item that needs no reply: `done`, `dropped` or `failed`."""
        with self._writing() as db:
            inbox.finish(db, item_id, status, time.time())

    def add_reply(
        self, inbox_id: int, *, platform: str, chat_id: str, thread_id: str, reply_to: str | None, text: str,
        episode_id: int | None,
    ) -> Reply:  # fmt: skip
        """Record the intent to send `text` for the item (or return the reply already recorded)."""
        with self._writing() as db:
            return inbox.add_reply(
                db, inbox_id, platform=platform, chat_id=chat_id, thread_id=thread_id, reply_to=reply_to,
                text=text, episode_id=episode_id, now=time.time(),
            )  # fmt: skip

    def reply_for(self, inbox_id: int) -> Reply | None:
        return inbox.reply_for(self.db, inbox_id)

    def mark_reply_sent(self, reply: Reply, platform_ids: list[str], item_status: str = "done") -> None:
        """The reply was sent as `platform_ids`; its item is finished in the same transaction."""
        with self._writing() as db:
            inbox.mark_sent(db, reply, platform_ids, item_status, time.time())

    def episode_for_sent_message(self, platform: str, chat_id: str, message_id: str) -> int | None:
        return inbox.episode_for_message(self.db, platform, chat_id, message_id)

    def inbox_depth(self) -> InboxDepth:
        return inbox.depth(self.db)

    def prune_inbox(self, older_than_s: float) -> int:
        """Forget finished items, their replies, and pairing codes older than `older_than_s`."""
        before = time.time() - older_than_s
        with self._writing() as db:
            access.prune(db, before)
            return inbox.prune(db, before)

    # --- access: pairing codes and grants (access.py) ----------------------------------------

    def issue_pairing_code(
        self, platform: str, platform_user_id: str, chat_id: str, user_name: str | None, *, ttl_s: float,
        per_user_per_day: int, max_pending: int,
    ) -> PairingCode | None:  # fmt: skip
        """A new pairing code for the user; None while one is live or a limit says not now."""
        with self._writing() as db:
            return access.issue_code(
                db, platform, platform_user_id, chat_id, user_name, time.time(), ttl_s=ttl_s,
                per_user_per_day=per_user_per_day, max_pending=max_pending,
            )  # fmt: skip

    def approve_pairing(self, code: str) -> Grant:
        """Let in the user `code` was issued to; PairingError (after recording the failed try) if
        the code is unknown or expired, or too many tries failed lately."""
        with self._writing() as db:
            outcome = access.approve(db, code, time.time())
        if isinstance(outcome, str):
            raise PairingError(outcome)
        return outcome

    def grant_access(self, platform: str, platform_user_id: str, user_name: str | None = None) -> Grant:
        with self._writing() as db:
            return access.grant(db, platform, platform_user_id, user_name, time.time())

    def revoke_access(self, platform: str, platform_user_id: str) -> bool:
        """Withdraw a grant (and any live code); whether the user had one."""
        with self._writing() as db:
            return access.revoke(db, platform, platform_user_id)

    def has_access_grant(self, platform: str, platform_user_id: str) -> bool:
        return access.has_grant(self.db, platform, platform_user_id)

    def access_grants(self) -> list[Grant]:
        return access.grants(self.db)

    def pending_pairing_codes(self) -> list[PairingCode]:
        return access.pending_codes(self.db, time.time())


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}; got {role!r}")
