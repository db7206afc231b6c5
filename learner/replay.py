"""Replaying tasks with an executor: G attempts per task, each in a fresh sandbox started from
the task's snapshot, through the runtime's own executor loop, recorded at token level and
scored by the task's verifier (or, for a task harvested from an episode, by its reference
outcome: the attempt's file changes, command outputs and final answer; learner/tasks/outcome.py).

The attempts at one task form a group (GRPO compares them with each other); its id is
f"{label}:{task.id}". Each attempt's sampling seed comes from (seed, task, attempt), so two
executors replayed with the same settings face the same draws: the gate pairs their results.
`concurrent_tasks` tasks run at once, all their attempts concurrently; with a backend that
samples batches (LocalBackend), model calls that wait together go as one batch
(learner/batching.py), across tasks and turns. A row's draws depend only on its seed, so the
results do not depend on how calls were batched (batched arithmetic aside).
Nothing asks a person here: commands the policy wants approved are declined.
The commands are a model's, so every attempt runs in an isolating sandbox: `sandbox = "auto"`
is resolved once per replay to the strongest backend that works here (docker, then bwrap),
SandboxUnavailable when none does; `local` only when the operator names it, with an
IsolationWarning. Each episode records the backend it ran in. `command_timeout_s` caps every
command's timeout as `[sandbox] timeout_s` caps the runtime's.
`as_served(settings)` is how held-out tasks are replayed: with constrained sampling.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from learner.batching import BatchSampler, GroupBatcher
from learner.tasks import AttemptTrace, Task, isolating_backend, shell_tool_output, task_snapshot, verify
from memory import MemoryStore
from runtime import BackendName, Snapshot, open_sandbox
from runtime.executor import ExecutorBackend, SamplingParams
from runtime.executor.loop import SERVING_TEMPERATURE, ExecutorRun, ExecutorSettings, run_executor
from runtime.executor.recording import MemoryRecorder
from runtime.tools import ToolContext

LEARNER_USER = "learner"
T = TypeVar("T")


@dataclass(frozen=True)
class ReplaySettings:
    group_size: int = 8
    sandbox: BackendName = "auto"  # "local" runs model-written commands unisolated: only by choice
    seed: int = 0
    concurrent_tasks: int = 4  # tasks replayed at once: at most this x group_size sandboxes
    # The most seconds any command of a replay may run (`[sandbox] timeout_s`); None: the task's own.
    command_timeout_s: float | None = None
    executor: ExecutorSettings = field(
        default_factory=lambda: ExecutorSettings(
            max_turns=2, sampling=SamplingParams(temperature=1.0, max_tokens=96)
        )
    )


def as_served(settings: ReplaySettings, temperature: float = SERVING_TEMPERATURE) -> ReplaySettings:
    """`settings` with the executor sampled as the runtime serves it: its replies kept to the
    action format (runtime/executor/action_grammar.py), at the serving `temperature` (`[executor]
    temperature`): how held-out tasks are evaluated, so the competence routing reads is the one
    people get. Training replays sample freely at temperature 1, so that their raw logprobs are
    exactly the policy that sampled them."""
    sampling = replace(settings.executor.sampling, constrained=True, temperature=temperature)
    return replace(settings, executor=replace(settings.executor, sampling=sampling))


@dataclass(frozen=True)
class Attempt:
    task_id: str
    family: str
    split: str
    index: int  # which attempt of its group (and of its sampling seed)
    episode_id: int
    reward: float
    parse_failures: int
    timeouts: int
    completed: bool


async def replay(
    tasks: Sequence[Task],
    backend: ExecutorBackend,
    store: MemoryStore,
    snapshot_dir: Path,
    settings: ReplaySettings,
    label: str,
) -> list[Attempt]:
    """Every task `settings.group_size` times; the attempts in task order."""
    settings = replace(settings, sandbox=await isolating_backend(settings.sandbox))
    batcher = GroupBatcher(backend) if isinstance(backend, BatchSampler) else None
    slots = asyncio.Semaphore(max(1, settings.concurrent_tasks))

    async def group(task: Task) -> list[Attempt]:
        async with slots:
            # The group's attempts count from now: a batch waits for them while they prepare.
            if batcher is not None:
                batcher.reserve(settings.group_size)
            try:
                snapshot = await task_snapshot(task, snapshot_dir)
            except BaseException:
                if batcher is not None:
                    batcher.release(settings.group_size)
                raise
            return await all_or_none(
                _attempt(task, index, snapshot, backend, batcher, store, snapshot_dir, settings, label)
                for index in range(settings.group_size)
            )  # fmt: skip

    groups = await all_or_none(group(task) for task in tasks)
    return [attempt for attempts in groups for attempt in attempts]


async def all_or_none(coroutines: Iterable[Awaitable[T]]) -> list[T]:
    """Run `coroutines` together; when one fails (or this is cancelled), cancel the others and
    wait for them to end before raising that failure. A bare gather leaves them running, and
    when the failure ends the program, asyncio.run cancels them together with the tasks asyncio
    uses to start a subprocess: CPython 3.11 then waits forever for an exit it never reports
    (a quickstart hung that way after one attempt's command could not be started)."""
    tasks = [asyncio.ensure_future(coroutine) for coroutine in coroutines]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _attempt(
    task: Task,
    index: int,
    snapshot: Snapshot,
    backend: ExecutorBackend,
    batcher: GroupBatcher | None,
    store: MemoryStore,
    snapshot_dir: Path,
    settings: ReplaySettings,
    label: str,
) -> Attempt:
    sampling = replace(settings.executor.sampling, seed=attempt_seed(settings.seed, task.id, index))
    executor = replace(settings.executor, sampling=sampling, default_timeout_s=task.timeout_s)
    sampler: ExecutorBackend = batcher if batcher is not None else backend
    # `replay` reserved this attempt with the batcher: it is counted until it leaves.
    running = batcher.attempt(reserved=True) if batcher is not None else nullcontext()
    async with running, open_sandbox(settings.sandbox, workspace=snapshot) as sandbox:
        recorder = MemoryRecorder(
            store, snapshot_dir, split=task.split, group_id=f"{label}:{task.id}",
            verifier=task.verifier, initial_snapshot=snapshot,
        )  # fmt: skip
        context = ToolContext(
            user=LEARNER_USER, sandbox=sandbox, memory=store, command_timeout_s=settings.command_timeout_s
        )
        episode_id = await recorder.start(task.instruction, backend.name, context)
        run = ExecutorRun()
        try:
            run = await run_executor(
                sampler, context, task.instruction, executor,
                on_call=lambda _index, completion, messages: recorder.record(episode_id, completion, messages),
            )  # fmt: skip
        finally:
            await recorder.finish(episode_id, run)
        trace = AttemptTrace(tuple(shell_tool_output(output) for output in run.outputs), run.answer)
        passed = await verify(task, sandbox, trace)
    reward = 1.0 if passed else 0.0
    store.episodes.record_reward(episode_id, reward, "verifier", "check passed" if passed else "check failed")
    return Attempt(
        task.id,
        task.family,
        task.split,
        index,
        episode_id,
        reward,
        run.parse_failures,
        run.timeouts,
        run.completed,
    )


def attempt_seed(seed: int, task_id: str, index: int) -> int:
    digest = hashlib.sha256(f"{seed}:{task_id}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little")
