"""Where `terminal_task` work goes, and the record it leaves.

Routing: the executor model gets the work when its measured success rate on held-out tasks
is at or above `threshold`; until then (no model yet, or not good enough) the planner model
does executor work through the same loop, so its episodes are recorded too (as text, for
distilling the first executor). Both paths record an executor episode with every call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from runtime.executor.completion import Completion, ExecutorBackend
from runtime.executor.errors import ExecutorError
from runtime.executor.loop import ExecutorRun, ExecutorSettings, run_executor
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


class TerminalExecutor:
    def __init__(
        self,
        planner: ExecutorBackend,
        settings: ExecutorSettings,
        *,
        model: ExecutorBackend | None = None,
        threshold: float = 0.6,
        heldout_success: Callable[[], float | None] = lambda: None,
        recorder: EpisodeRecorder | None = None,
    ) -> None:
        self.planner = planner
        self.model = model
        self.settings = settings
        self.threshold = threshold
        self.heldout_success = heldout_success
        self.recorder = recorder
        self.last_route: Route | None = None

    def route(self) -> Route:
        if self.model is None:
            return Route(self.planner, "no executor model configured")
        rate = self.heldout_success()
        if rate is None:
            return Route(self.planner, "the executor model has no held-out result yet")
        if rate < self.threshold:
            return Route(self.planner, f"executor held-out success {rate:.2f} < {self.threshold:.2f}")
        return Route(self.model, f"executor held-out success {rate:.2f} >= {self.threshold:.2f}")

    async def __call__(self, query: str, context: ToolContext) -> str:
        """terminal_task's work: run the executor loop on the chosen backend; its report.

        An executor model that cannot be reached is an error the planner sees (it can retry or
        do without), not a failed turn.
        """
        route = self.last_route = self.route()
        recorder = self.recorder
        episode_id = None if recorder is None else await recorder.start(query, route.backend.name, context)
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
        return run.report()
