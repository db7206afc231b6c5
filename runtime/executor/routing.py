"""Routing terminal work by measured competence, per kind of task.

For a query, `kind = TaskKinds.kind_of(query)` (kinds.py). The executor model takes it when the
serving version's held-out success on that kind (`store.routing.competence`, written by the
learner's gate under the version's name; the base model is "base") is

    >= the planner's success on the kind - margin    (live planner-routed episodes' mean reward)
    >= threshold                                     while the planner has no measured success

and the planner keeps it otherwise, and always when the version was never measured on the kind.

The direct route (`decide_direct`, runtime/direct_route.py): a person's whole message that is a
close instance of a known kind (similarity >= `direct_similarity`, stricter than joining a kind,
so a message that asks for more than the task does not qualify) and that the executor would take
goes to the executor without a planner call; when its run does not complete, the planner takes
the turn over with the attempt in its context.
Exploration: when the executor would take it, the planner takes it instead with probability
`exploration`, so both routes keep being measured. The draw is deterministic: a hash of (seed,
kind, how many decisions the kind has had), so a run can be replayed and a test can pin it.

Every decision is stored (`store.routing.record_decision`) with its reason, the version that
served it and the executor episode it produced.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from memory import BASE_VERSION, MemoryStore
from runtime.executor.kinds import TaskKinds


@dataclass(frozen=True)
class RoutingSettings:
    threshold: float = 0.6  # the bar while the planner has no measured success on a kind
    margin: float = 0.05  # how far below the planner's success the executor may be
    exploration: float = 0.1  # the planner's share of the kinds the executor took
    seed: int = 0
    # The direct route: a chat message at least this similar to a known kind's example
    # (kinds.py), on a kind the executor takes, goes to the executor without a planner call.
    direct_similarity: float = 0.6


@dataclass(frozen=True)
class Decision:
    route: str  # "executor" or "planner"
    kind: str
    reason: str


class Router:
    """Decides a query's route from the store's measurements; see the module docstring."""

    def __init__(
        self, store: MemoryStore, settings: RoutingSettings | None = None, kinds: TaskKinds | None = None
    ) -> None:
        self.store = store
        self.settings = settings or RoutingSettings()
        self.kinds = kinds or TaskKinds(store)

    def decide(self, query: str, version: str | None, *, has_model: bool = True) -> Decision:
        """The route for `query` when `version` serves the executor model (None: the base model;
        `has_model=False`: there is no executor model at all)."""
        kind = self.kinds.kind_of(query)
        if not has_model:
            return Decision("planner", kind, "no executor model configured")
        return self._decide(kind, version)

    def decide_direct(self, request: str, version: str | None) -> Decision | None:
        """The executor's decision for a whole chat message on the direct route (no planner
        call): only for a close instance of a known kind (`direct_similarity`), and only when
        `decide` would give that kind to the executor, exploration included (the draw does not
        move until a decision is recorded, so the planner's own terminal_task call that follows
        a refusal draws the same); else None. Stores nothing."""
        kind = self.kinds.match(request, self.settings.direct_similarity)
        if kind is None:
            return None
        decision = self._decide(kind, version)
        if decision.route != "executor":
            return None
        return Decision("executor", kind, f"direct route: {decision.reason}")

    def _decide(self, kind: str, version: str | None) -> Decision:
        name = version or BASE_VERSION
        routing, settings = self.store.routing, self.settings
        measured = routing.competence(name, kind)
        if measured is None:
            return Decision("planner", kind, f"{name} has no held-out result on this kind yet")
        planner = routing.planner_success(kind)
        if planner is None:
            bar, against = settings.threshold, "the threshold (the planner is not measured on this kind)"
        else:
            bar, against = planner - settings.margin, f"planner {planner:.2f} - margin {settings.margin:.2f}"
        said = f"{name} held-out success {measured.success:.2f} on {measured.tasks} tasks"
        if measured.success < bar:
            return Decision("planner", kind, f"{said} < {bar:.2f}, {against}")
        reason = f"{said} >= {bar:.2f}, {against}"
        if self._explores(kind):
            return Decision("planner", kind, f"exploration ({settings.exploration:.0%} share): {reason}")
        return Decision("executor", kind, reason)

    def record(
        self, decision: Decision, version: str | None, episode_id: int | None, session_id: int | None
    ) -> None:
        self.store.routing.record_decision(
            kind=decision.kind,
            route=decision.route,
            reason=decision.reason,
            version=(version or BASE_VERSION) if decision.route == "executor" else None,
            episode_id=episode_id,
            session_id=session_id,
        )

    def _explores(self, kind: str) -> bool:
        if self.settings.exploration <= 0:
            return False
        nth = self.store.routing.decision_count(kind)
        return draw(f"{self.settings.seed}/{kind}/{nth}") < self.settings.exploration


def draw(key: str) -> float:
    """A uniform number in [0, 1) fixed by `key`."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64
