"""Episodes: one task the agent worked on, its outcome, and the reward it earned.

Reward sources rank user > verifier > judge: a person's /good or /bad overrides a
verifier, and a verifier (exit codes, checks the task carries) overrides an LLM judge. A
lower-ranked source never overwrites a higher-ranked one.
"""

import time
from dataclasses import dataclass

from .errors import UnknownRecordError
from .writer import Writer

REWARD_RANK = {"judge": 1, "verifier": 2, "user": 3}


def reward_rank_sql(source: str) -> str:
    """REWARD_RANK as an SQL expression over the column `source` (0 for no source)."""
    cases = " ".join(f"when '{name}' then {rank}" for name, rank in REWARD_RANK.items())
    return f"(case {source} {cases} else 0 end)"


STATUSES = ("running", "succeeded", "failed", "abandoned")

_COLUMNS = (
    "id, session_id, user_id, task, status, reward, reward_source, reward_reason,"
    " request_message_id, reply_message_id, created_at, finished_at"
)


@dataclass(frozen=True)
class Episode:
    id: int
    session_id: int | None
    user_id: int | None
    task: str
    status: str
    reward: float | None
    reward_source: str | None
    reward_reason: str | None
    request_message_id: int | None
    reply_message_id: int | None
    created_at: float
    finished_at: float | None


class Episodes:
    """The episodes table of the store's database (`store.episodes`): chat turns' episodes here,
    executor episodes through `store.trajectories`."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self._db = writer.db

    def start(self, session_id: int, user_id: int, task: str, request_message_id: int | None = None) -> int:
        with self._writer.writing() as db:
            db.execute(
                "insert into episodes(session_id, user_id, task, request_message_id, created_at)"
                " values (?, ?, ?, ?, ?)",
                (session_id, user_id, task, request_message_id, time.time()),
            )
            return db.last_insert_rowid()

    def finish(self, episode_id: int, status: str, reply_message_id: int | None = None) -> None:
        if status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}; got {status!r}")
        with self._writer.writing() as db:
            db.execute(
                "update episodes set status = ?, reply_message_id = ?, finished_at = ? where id = ?",
                (status, reply_message_id, time.time(), episode_id),
            )

    def record_reward(self, episode_id: int, reward: float, source: str, reason: str = "") -> bool:
        """Store the reward unless a higher-ranked source already gave one (user > verifier >
        judge); True if stored."""
        if source not in REWARD_RANK:
            raise ValueError(f"reward source must be one of {', '.join(REWARD_RANK)}; got {source!r}")
        if not 0.0 <= reward <= 1.0:
            raise ValueError(f"reward must be between 0 and 1; got {reward}")
        with self._writer.writing() as db:
            row = db.execute("select reward_source from episodes where id = ?", (episode_id,)).fetchone()
            if row is None:
                return False
            if row[0] is not None and REWARD_RANK[row[0]] > REWARD_RANK[source]:
                return False
            db.execute(
                "update episodes set reward = ?, reward_source = ?, reward_reason = ? where id = ?",
                (reward, source, reason, episode_id),
            )
            return True

    def get(self, episode_id: int) -> Episode:
        row = self._db.execute(f"select {_COLUMNS} from episodes where id = ?", (episode_id,)).fetchone()
        if row is None:
            raise UnknownRecordError(f"no episode with id {episode_id}")
        return Episode(*row)

    def latest(self, session_id: int) -> Episode | None:
        """The session's newest episode."""
        row = self._db.execute(
            f"select {_COLUMNS} from episodes where session_id = ? order by id desc limit 1", (session_id,)
        ).fetchone()
        return None if row is None else Episode(*row)
