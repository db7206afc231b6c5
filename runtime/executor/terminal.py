"""Where `terminal_task` work goes, and the record it leaves.

Routing (routing.py): per kind of task, the executor model takes the work where the serving
version's measured held-out success on that kind matches the planner's (minus a margin); the
planner keeps the rest, a small exploration share, and everything while there is no executor
model. The planner does executor work through the same loop, so its episodes are recorded too
(as text, for distilling the first executor). Both paths record an executor episode with every
call, and every decision is stored with its reason and that episode.

Hot swap (switch.py): with a `ModelSwitch`, the executor model's version can change while the
agent runs; each run is pinned to the version it started on, and its decision records it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from runtime.executor.completion import Completion, ExecutorBackend
from runtime.executor.errors import ExecutorError
from runtime.executor.loop import ExecutorRun, ExecutorSettings, run_executor
from runtime.executor.routing import Decision, Router
from runtime.executor.switch import ModelSwitch
from runtime.tools import ToolContext, ToolError


class EpisodeRecorder(Protocol):
    """Stores executor episodes and their calls (runtime/executor/recording.py)."""

    async def start(self, query: str, backend: str, context: ToolContext) -> int: ...

    async def record(
        self, episode_id: int, completion: Completion, messages: list[dict[str, Any]]
    ) -> None: ...

    async def finish(self, episode_id: int, run: ExecutorRun) -> None: ...


@dataclass
class Route:
    backend: ExecutorBackend
    reason: str
    decision: Decision | None = None  # None without a router: nothing is measured or stored
    version: str | None = None  # the executor version serving it (None: the base model, or the planner)


class TerminalExecutor:
    """terminal_task's runner. `model` is a fixed executor backend; `switch` one whose version
    can change while the agent runs (its backend is then the model). `router` decides per kind
    and stores decisions; without one the planner does all the work."""

    def __init__(
        self,
        planner: ExecutorBackend,
        settings: ExecutorSettings,
        *,
        model: ExecutorBackend | None = None,
        switch: ModelSwitch | None = None,
        router: Router | None = None,
        recorder: EpisodeRecorder | None = None,
    ) -> None:
        self.planner = planner
        self.switch = switch
        self.model = switch.backend if switch is not None else model
        self.settings = settings
        self.router = router
        self.recorder = recorder
        self.last_route: Route | None = None

    @property
    def version(self) -> str | None:
        """The executor version new runs get (None: the base model, or no model)."""
        return getattr(self.model, "adapter_version", None)

    def route(self, query: str) -> Route:
        """Where `query` would go now (stores nothing; `__call__` records its decision)."""
        return self._route(query, self.model, self.version)

    def _route(self, query: str, model: ExecutorBackend | None, version: str | None) -> Route:
        if self.router is None:
            reason = "no executor model configured" if model is None else "no router: nothing measured"
            return Route(self.planner, reason)
        decision = self.router.decide(query, version, has_model=model is not None)
        if decision.route == "executor" and model is not None:
            return Route(model, decision.reason, decision, version)
        return Route(self.planner, decision.reason, decision)

    @asynccontextmanager
    async def _serving(self) -> AsyncIterator[tuple[ExecutorBackend | None, str | None]]:
        """The executor model for one run, pinned to the version serving when it starts."""
        if self.switch is None:
            yield self.model, self.version
            return
        async with self.switch.pinned() as (model, version):
            yield model, version

    async def __call__(self, query: str, context: ToolContext) -> str:
        """terminal_task's work: run the executor loop on the chosen backend; its report.

        An executor model that cannot be reached is an error the planner sees (it can retry or
        do without), not a failed turn.
        """
        async with self._serving() as (model, version):
            route = self.last_route = self._route(query, model, version)
            return (await self._run(route, query, context)).report()

    async def run_direct(self, request: str, context: ToolContext) -> ExecutorRun | None:
        """The direct route (routing.py `decide_direct`): a person's whole message run by the
        executor model without the planner; None when the serving version does not take it.
        Raises ToolError when the executor model fails."""
        async with self._serving() as (model, version):
            if self.router is None or model is None:
                return None
            decision = self.router.decide_direct(request, version)
            if decision is None:
                return None
            return await self._run(Route(model, decision.reason, decision, version), request, context)

    async def _run(self, route: Route, query: str, context: ToolContext) -> ExecutorRun:
        """The executor loop on `route`, its decision and episode recorded."""
        recorder = self.recorder
        episode_id = None if recorder is None else await recorder.start(query, route.backend.name, context)
        if self.router is not None and route.decision is not None:
            self.router.record(route.decision, route.version, episode_id, context.session_id)
        run = ExecutorRun()
        try:
            run = await run_executor(
                route.backend, context, query, self.settings,
                on_call=None if recorder is None or episode_id is None
                else lambda _index, completion, messages: recorder.record(episode_id, completion, messages),
            )  # fmt: skip
        except ExecutorError as error:
            raise ToolError(f"the executor failed: {error}") from error
        finally:
            if recorder is not None and episode_id is not None:
                await recorder.finish(episode_id, run)
        return run
