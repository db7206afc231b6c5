"""Executor episodes and their model calls (`store.trajectories`): the learner's training data.

An executor episode is a row of `episodes` with kind 'executor' and its columns (split, group,
sandbox, snapshot, verifier, secret mark, parse failures, timeouts); its model calls live in
`model_calls`, stored compactly at token level (model_calls.py says how).

Invariants:
- text (the task, the verifier, each call's completion and messages) is redacted before it is
  stored (memory/secrets.py), with the configured secrets (`set_secrets`) as well as every
  secret the detectors find;
  when redaction found anything, the episode is marked `contains_secret`, since its token ids
  cannot be redacted, and it never leaves through `read()` (listings flag it instead);
- one transaction per call recorded; the cache of each role's last sequence is updated only
  after that transaction commits.
"""

import time
from collections.abc import Iterable, Iterator

from . import model_calls
from .episodes import Episodes
from .errors import UnknownRecordError
from .trajectory_records import (
    SPLITS,
    ExecutorEpisode,
    RecordedCall,
    StoredCall,
    Trajectory,
    TrajectoryFilter,
    TrajectorySummary,
)
from .writer import Writer

PAGE = 100  # episodes read per query while iterating

EPISODE_COLUMNS = (
    "id, kind, task, status, reward, reward_source, reward_reason, split, group_id, sandbox_backend,"
    " snapshot_id, snapshot_bytes, verifier, parent_episode_id, session_id, user_id, contains_secret,"
    " created_at, finished_at, parse_failures, timeouts"
)


class Trajectories:
    """Executor episodes and model calls in the store's database (`store.trajectories`)."""

    def __init__(self, writer: Writer, episodes: Episodes) -> None:
        self._writer = writer
        self._db = writer.db
        self._episodes = episodes
        self._log = model_calls.TrajectoryLog()

    def set_secrets(self, secrets: Iterable[str]) -> None:
        """Configured secrets (API keys, bot tokens) to redact from trajectory text from now on."""
        self._log = model_calls.TrajectoryLog(tuple(secrets))

    # --- writing -----------------------------------------------------------------------------

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
        with self._writer.writing() as db:
            if split not in SPLITS:
                raise ValueError(f"split must be one of {', '.join(SPLITS)}; got {split!r}")
            redactor = self._log.redactor
            redacted = redactor.text(task)
            task, found = redacted.text, redacted.found
            if verifier is not None:
                redacted = redactor.text(verifier)
                verifier, found = redacted.text, found + redacted.found
            db.execute(
                "insert into episodes(kind, task, split, group_id, sandbox_backend, snapshot_id, snapshot_bytes,"
                " verifier, session_id, user_id, parent_episode_id, contains_secret, created_at)"
                " values ('executor', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (task, split, group_id, sandbox_backend, snapshot_id, snapshot_bytes, verifier, session_id,
                 user_id, parent_episode_id, int(bool(found)), time.time()),
            )  # fmt: skip
            return db.last_insert_rowid()

    def record_call(self, episode_id: int, call: StoredCall) -> int:
        """Store one model call of the episode (next index, one transaction); returns its id."""
        with self._writer.writing() as db:
            call_id, tail = model_calls.record_call(db, self._log, episode_id, call, time.time())
        self._log.remember(episode_id, call.role, tail)
        return call_id

    def finish_executor_episode(
        self, episode_id: int, status: str, *, parse_failures: int, timeouts: int
    ) -> None:
        """End an executor episode, with how often its model wrote no valid action and how many
        of its commands timed out (the promotion gate compares both)."""
        with self._writer.writing() as db:
            self._episodes.finish(episode_id, status)
            db.execute(
                "update episodes set parse_failures = ?, timeouts = ? where id = ?",
                (parse_failures, timeouts, episode_id),
            )

    def mark_secret(self, episode_id: int) -> None:
        """Keep the episode out of training data and exports: its tokens may hold a secret."""
        with self._writer.writing() as db:
            db.execute("update episodes set contains_secret = 1 where id = ?", (episode_id,))
            if db.changes() == 0:
                raise UnknownRecordError(f"no episode with id {episode_id}")

    # --- reading -----------------------------------------------------------------------------

    def executor_episode(self, episode_id: int) -> ExecutorEpisode:
        row = self._db.execute(
            f"select {EPISODE_COLUMNS} from episodes where id = ?", (episode_id,)
        ).fetchone()
        if row is None:
            raise UnknownRecordError(f"no episode with id {episode_id}")
        return _episode(row)

    def calls(self, episode_id: int) -> list[RecordedCall]:
        """The episode's calls in order, prompt_ids rebuilt in full."""
        return model_calls.read(self._db, episode_id)[0]

    def heldout_success(
        self, model: str, adapter_version: str | None = None, last: int = 200
    ) -> float | None:
        """Mean reward of the newest `last` scored held-out executor episodes that `model` (with
        `adapter_version`) ran; None when it has none yet. Routing reads this."""
        row = self._db.execute(
            "select avg(reward), count(*) from (select e.reward from episodes e"
            " where e.kind = 'executor' and e.split = 'heldout' and e.reward is not null"
            " and exists (select 1 from model_calls c where c.episode_id = e.id and c.model = ?"
            "  and c.adapter_version is ?)"
            " order by e.id desc limit ?)",
            (model, adapter_version, last),
        ).fetchone()
        return None if row[1] == 0 else row[0]

    def read(
        self, *, since: float | None = None, until: float | None = None, min_reward: float | None = None,
        split: str | None = None, limit: int | None = None,
    ) -> Iterator[Trajectory]:  # fmt: skip
        """Executor episodes that pass the filters and are not secret-marked, with their calls,
        oldest first."""
        return self._read(TrajectoryFilter(since, until, min_reward, split, limit))  # checked now, not lazily

    def _read(self, where: TrajectoryFilter) -> Iterator[Trajectory]:
        clause, bindings = _where(where, secrets=False)
        last, left = 0, where.limit
        while left is None or left > 0:
            page = PAGE if left is None else min(PAGE, left)
            rows = self._db.execute(
                f"select {EPISODE_COLUMNS} from episodes where {clause} and id > ? order by id limit ?",
                (*bindings, last, page),
            ).fetchall()
            if not rows:
                return
            for row in rows:
                yield Trajectory(_episode(row), self.calls(row[0]))
            last = rows[-1][0]
            left = None if left is None else left - len(rows)

    def summaries(
        self, *, since: float | None = None, until: float | None = None, min_reward: float | None = None,
        split: str | None = None, limit: int | None = 20,
    ) -> list[TrajectorySummary]:  # fmt: skip
        """The newest `limit` executor episodes (all when None) that pass the filters, newest
        first, with call and token counts; secret-marked ones included (flagged, not hidden, in
        a listing)."""
        where = TrajectoryFilter(since, until, min_reward, split, limit)
        clause, bindings = _where(where, secrets=True)
        columns = ", ".join(f"e.{name.strip()}" for name in EPISODE_COLUMNS.split(","))
        rows = self._db.execute(
            f"select {columns}, count(c.id), coalesce(sum(length(c.prompt_suffix) + length(c.completion_ids)), 0) / 4,"
            " coalesce(sum(length(c.completion_ids)), 0) / 4"
            f" from (select * from episodes where {clause} order by id desc limit ?) e"
            " left join model_calls c on c.episode_id = e.id group by e.id order by e.id desc",
            (*bindings, -1 if where.limit is None else where.limit),
        ).fetchall()
        return [TrajectorySummary(_episode(row[:-3]), *row[-3:]) for row in rows]

    def secret_marked_count(
        self, *, since: float | None = None, until: float | None = None, min_reward: float | None = None,
        split: str | None = None,
    ) -> int:  # fmt: skip
        """How many executor episodes passing the filters are kept out for holding a secret."""
        clause, bindings = _where(TrajectoryFilter(since, until, min_reward, split), secrets=True)
        return self._db.execute(
            f"select count(*) from episodes where {clause} and contains_secret", bindings
        ).fetchone()[0]

    def prefix_mismatches(self, *, since: float | None = None, until: float | None = None) -> dict[str, int]:
        """Calls whose prompt did not extend the previous call's prompt + completion, by cause."""
        clause, bindings = _where(TrajectoryFilter(since, until), secrets=True)
        rows = self._db.execute(
            "select mismatch, count(*) from model_calls where mismatch is not null and episode_id in"
            f" (select id from episodes where {clause}) group by mismatch order by count(*) desc",
            bindings,
        ).fetchall()
        return dict(rows)


def _where(where: TrajectoryFilter, *, secrets: bool) -> tuple[str, tuple[object, ...]]:
    parts, bindings = ["kind = 'executor'"], []
    for condition, value in (
        ("created_at >= ?", where.since),
        ("created_at < ?", where.until),
        ("reward >= ?", where.min_reward),
        ("split = ?", where.split),
    ):
        if value is not None:
            parts.append(condition)
            bindings.append(value)
    if not secrets:
        parts.append("not contains_secret")
    return " and ".join(parts), tuple(bindings)


def _episode(row: tuple) -> ExecutorEpisode:
    values = list(row)
    values[16] = bool(values[16])  # contains_secret
    return ExecutorEpisode(*values)
