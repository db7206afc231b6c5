"""Is a task sound? Its reference solution must pass its verifier, and doing nothing must fail
it; a task whose empty attempt passes rewards every attempt and teaches nothing.

    check_task(task, backend, options) -> TaskCheck
    check_tasks(tasks, backend, options, jobs=1, on_result=None) -> list[TaskCheck]

Each run starts a fresh sandbox from the task's workspace, by default in the strongest isolating
backend (see attempts.py: a reference and a `tests/test.sh` are someone else's code). A task
that needs its own Docker image (`Task.docker_needs`) is not run: its check says why. A task
without a reference can only be shown unsound (its empty attempt passes), never sound.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from learner.tasks.attempts import isolating_backend, run_attempt, run_reference
from learner.tasks.task import Task
from runtime.sandbox import BackendName, SandboxOptions


@dataclass(frozen=True)
class TaskCheck:
    task: Task
    reference_passed: bool | None  # None: no reference solution, or not run
    empty_failed: bool | None  # None: not run
    seconds: float
    reference_output: str = ""
    skipped: str = ""  # why the task was not run

    @property
    def sound(self) -> bool | None:
        """True, False, or None when it cannot be told (not run, or no reference)."""
        if self.empty_failed is False or self.reference_passed is False:
            return False
        if self.empty_failed is None or self.reference_passed is None:
            return None
        return True


async def check_task(
    task: Task, backend: BackendName = "auto", options: SandboxOptions | None = None
) -> TaskCheck:
    """Run the reference and the empty attempt of `task`, each in a fresh sandbox."""
    started = time.perf_counter()
    if task.needs_docker:
        return TaskCheck(
            task, None, None, 0.0, skipped="needs its own image: " + "; ".join(task.docker_needs)
        )
    reference_passed, reference_output = None, ""
    backend = await isolating_backend(backend, options)
    if task.has_reference:
        reference_passed, reference_output = await run_reference(task, backend, options)
    empty = await run_attempt(task, (), backend, options)
    return TaskCheck(
        task, reference_passed, not empty.passed, time.perf_counter() - started, reference_output
    )


async def check_tasks(
    tasks: Iterable[Task],
    backend: BackendName = "auto",
    options: SandboxOptions | None = None,
    *,
    jobs: int = 1,
    on_result: Callable[[TaskCheck], None] | None = None,
) -> list[TaskCheck]:
    """`check_task` for each task, `jobs` at a time; results in the order of `tasks`."""
    gate = asyncio.Semaphore(max(1, jobs))
    backend = await isolating_backend(backend, options)  # "auto" probes once, not per task

    async def one(task: Task) -> TaskCheck:
        async with gate:
            result = await check_task(task, backend, options)
        if on_result is not None:
            on_result(result)
        return result

    return list(await asyncio.gather(*(one(task) for task in tasks)))
