"""Routing by measured competence (`store.routing`): kinds of tasks, competence, decisions.

Three tables (migration m009):

    task_kinds          the known kinds of terminal tasks: a masked signature (the kind's name)
                        and the first instruction seen of it (runtime/executor/kinds.py groups)
    competence          an executor version's held-out success on a kind, as the learner's gate
                        measured it; appended, the newest row per (version, kind) is the one read
    routing_decisions   every terminal task's route ('executor' or 'planner'), its kind, the
                        version that served it, the reason, and the executor episode it produced

    store.routing.record_competence("v3", {"copy the file <path> to <path>": (0.75, 8)})
    store.routing.competence("v3", kind)   # Competence(success=0.75, tasks=8, ...) or None
    store.routing.planner_success(kind)    # mean reward of live planner-routed episodes, or None

Invariants:
- The base model (no adapter) is the version named `BASE_VERSION` ("base").
- The planner's success on a kind counts live episodes the planner route handled and that have a
  reward: the executor episode's own, or its parent chat episode's when that source ranks higher
  (user > verifier > judge; a user's thumbs up or down lands on the chat episode).
"""

import time
from dataclasses import dataclass

from .episodes import reward_rank_sql
from .writer import Writer

BASE_VERSION = "base"
ROUTES = ("executor", "planner")


@dataclass(frozen=True)
class Competence:
    version: str
    kind: str
    success: float  # mean held-out reward, 0..1
    tasks: int  # held-out tasks it was measured on
    measured_at: float
    source: str  # who measured it: "gate", "bench", ...


@dataclass(frozen=True)
class RoutingDecision:
    id: int
    at: float
    session_id: int | None
    episode_id: int | None
    kind: str
    route: str  # "executor" or "planner"
    version: str | None  # the executor version that served it (None on the planner route)
    reason: str


@dataclass(frozen=True)
class RouteDay:
    """One day's decisions on one route (UTC days), for reports and benchmarks."""

    day: str  # YYYY-MM-DD
    route: str
    decisions: int
    scored: int  # decisions whose episode (or its parent) has a reward
    mean_reward: float | None


# The episode's own reward, or its chat turn's when that ranks higher (user > verifier > judge;
# its own on a tie): the rule the learner's harvest uses (learner/tasks/episodes.py
# episode_reward), so a user's thumbs down on the turn outweighs a verifier's pass.
_REWARD = (
    "(case when p.reward is not null and (e.reward is null or "
    f"{reward_rank_sql('p.reward_source')} > {reward_rank_sql('e.reward_source')})"
    " then p.reward else e.reward end)"
)
_WITH_REWARD = (
    " from routing_decisions d left join episodes e on e.id = d.episode_id"
    " left join episodes p on p.id = e.parent_episode_id"
)


class Routing:
    """The routing tables of the store's database (`store.routing`)."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self._db = writer.db

    # --- kinds -----------------------------------------------------------------------------------

    def kinds(self, after_id: int = 0) -> list[tuple[int, str, str]]:
        """Known kinds created after `after_id`, oldest first: (id, signature, example)."""
        return self._db.execute(
            "select id, signature, example from task_kinds where id > ? order by id", (after_id,)
        ).fetchall()

    def add_kind(self, signature: str, example: str) -> int:
        """Store a new kind (a known signature keeps its first example); returns its id."""
        with self._writer.writing() as db:
            db.execute(
                "insert into task_kinds(signature, example, created_at) values (?, ?, ?)"
                " on conflict(signature) do nothing",
                (signature, example, time.time()),
            )
            return db.execute("select id from task_kinds where signature = ?", (signature,)).fetchone()[0]

    # --- competence ------------------------------------------------------------------------------

    def record_competence(
        self, version: str, by_kind: dict[str, tuple[float, int]], *, source: str = "gate"
    ) -> None:
        """Store `version`'s held-out success on each kind: {kind: (success 0..1, tasks)}."""
        now = time.time()
        for kind, (success, tasks) in by_kind.items():
            if not 0.0 <= success <= 1.0:
                raise ValueError(f"success on {kind!r} must be between 0 and 1; got {success}")
            if tasks < 0:
                raise ValueError(f"tasks on {kind!r} must be 0 or more; got {tasks}")
        with self._writer.writing() as db:
            db.executemany(
                "insert into competence(version, kind, success, tasks, measured_at, source)"
                " values (?, ?, ?, ?, ?, ?)",
                [(version, kind, float(s), int(n), now, source) for kind, (s, n) in by_kind.items()],
            )

    def competence(self, version: str, kind: str) -> Competence | None:
        """The newest measurement of `version` on `kind`, or None when it was never measured."""
        row = self._db.execute(
            "select version, kind, success, tasks, measured_at, source from competence"
            " where version = ? and kind = ? order by id desc limit 1",
            (version, kind),
        ).fetchone()
        return None if row is None else Competence(*row)

    def planner_success(self, kind: str, last: int = 200) -> float | None:
        """Mean reward of the newest `last` scored live episodes the planner route handled on
        `kind` (see the module docstring for which reward); None when there is none yet."""
        row = self._db.execute(
            f"select avg(reward), count(*) from (select {_REWARD} as reward {_WITH_REWARD}"
            f" where d.kind = ? and d.route = 'planner' and e.split = 'live' and {_REWARD} is not null"
            " order by d.id desc limit ?)",
            (kind, last),
        ).fetchone()
        return None if row[1] == 0 else row[0]

    # --- decisions -------------------------------------------------------------------------------

    def record_decision(
        self,
        *,
        kind: str,
        route: str,
        reason: str,
        version: str | None = None,
        episode_id: int | None = None,
        session_id: int | None = None,
    ) -> int:
        if route not in ROUTES:
            raise ValueError(f"route must be one of {', '.join(ROUTES)}; got {route!r}")
        with self._writer.writing() as db:
            db.execute(
                "insert into routing_decisions(at, session_id, episode_id, kind, route, version, reason)"
                " values (?, ?, ?, ?, ?, ?, ?)",
                (time.time(), session_id, episode_id, kind, route, version, reason),
            )
            return db.last_insert_rowid()

    def decision_count(self, kind: str) -> int:
        """How many decisions `kind` has had (the router's exploration draws count them)."""
        return self._db.execute("select count(*) from routing_decisions where kind = ?", (kind,)).fetchone()[
            0
        ]

    def decisions(self, since: float = 0.0, limit: int | None = None) -> list[RoutingDecision]:
        """Decisions made at or after `since` (unix seconds), oldest first."""
        rows = self._db.execute(
            "select id, at, session_id, episode_id, kind, route, version, reason from routing_decisions"
            " where at >= ? order by id limit ?",
            (since, -1 if limit is None else limit),
        ).fetchall()
        return [RoutingDecision(*row) for row in rows]

    def summary(self, since: float = 0.0) -> list[RouteDay]:
        """Decisions per UTC day and route since `since`, with how many were scored and their
        mean reward; by day, then route."""
        rows = self._db.execute(
            f"select date(d.at, 'unixepoch'), d.route, count(*), count({_REWARD}), avg({_REWARD})"
            f" {_WITH_REWARD} where d.at >= ? group by 1, 2 order by 1, 2",
            (since,),
        ).fetchall()
        return [RouteDay(*row) for row in rows]
