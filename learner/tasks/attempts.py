"""Running a task in a sandbox: its initial workspace, an attempt, and the verifier's verdict.

    prepare_workspace(task, sandbox)      write the task's files into a started sandbox
    task_snapshot(task, store)            the same workspace as a content-addressed snapshot
    verify(task, sandbox, trace)          copy in the verifier's files, run the check: exit 0;
                                          or, for a task with an `outcome`, compare with it
                                          (its files by its written check, when it has one)
    run_attempt(task, commands, backend)  a fresh sandbox, the commands, the verdict
    run_reference(task, backend)          run_attempt with the task's reference solution
    observe_outcome(task, commands, ...)  what commands do to the task's workspace (outcome.py)
    isolating_backend(backend, options)   the backend tasks will run in, resolved once

Task commands are model-written or imported (a terminal-bench `tests/test.sh` is anyone's
script), so they run where the runtime's commands do: `auto`, the strongest isolating backend
that works here (docker, then bwrap), and SandboxUnavailable when none does. `local` only when
a caller names it, and then an IsolationWarning says so.

Invariants: the verifier's files (a terminal-bench `tests/`) enter the workspace only when
the verifier runs, so an attempt never sees them; the reference's files (`solution/`) only
for the reference run, and they are removed before the check. Snapshots of the same files
get the same id: file times are fixed, so identical tasks share one tarball.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import cast

from learner.tasks.outcome import (
    AttemptTrace,
    Outcome,
    State,
    answer_matches,
    diff,
    files_state,
    workspace_state,
)
from learner.tasks.task import FileContent, Task
from runtime.sandbox import (
    BackendName,
    CommandResult,
    IsolationWarning,
    Sandbox,
    SandboxOptions,
    Snapshot,
    choose_backend,
    open_sandbox,
    take_snapshot,
)

FIXED_MTIME = 946_684_800  # 2000-01-01: content, not the clock, names a task's snapshot


@dataclass(frozen=True)
class AttemptResult:
    """What one attempt at a task did: the verdict, the transcript, and the time it took."""

    passed: bool
    output: str  # "$ command" and its output for each command, then the verifier's
    seconds: float


async def prepare_workspace(task: Task, sandbox: Sandbox) -> None:
    """Write the task's initial files into `sandbox`'s workspace."""
    await _write_all(sandbox, task, task.files)


async def task_snapshot(task: Task, store: Path) -> Snapshot:
    """The task's initial workspace as a snapshot in `store` (same files: same snapshot)."""
    with tempfile.TemporaryDirectory(prefix="temper-task-") as scratch:
        root = Path(scratch) / "workspace"
        await asyncio.to_thread(_materialise, task, root)
        return await asyncio.to_thread(take_snapshot, root, Path(store))


async def verify(task: Task, sandbox: Sandbox, trace: AttemptTrace | None = None) -> bool:
    """Whether the workspace in `sandbox` passes the task's check. A task with an `outcome` is
    scored against it, with `trace` (the attempt's command outputs and final answer; none when
    omitted) for the answer; other tasks ignore `trace`."""
    passed, _ = await _verdict(task, sandbox, trace or AttemptTrace())
    return passed


def start_state(task: Task) -> State:
    """The outcome state of the task's initial workspace."""
    return files_state(task.files, task.executable)


async def observe_outcome(
    task: Task, commands: Iterable[str], backend: BackendName = "auto", options: SandboxOptions | None = None
) -> Outcome:
    """Run `commands` in a fresh sandbox started from the task's workspace: the outcome they
    produce (file changes against the start, and the answer they printed)."""
    backend = await isolating_backend(backend, options)
    async with open_sandbox(backend, options=options) as sandbox:
        await prepare_workspace(task, sandbox)
        outputs = [(await sandbox.run(command, task.timeout_s)).output for command in commands]
        end = await asyncio.to_thread(workspace_state, sandbox.workspace)
    return Outcome.observed(start_state(task), end, outputs)


async def isolating_backend(backend: BackendName, options: SandboxOptions | None = None) -> BackendName:
    """The backend `backend` names here: for "auto" the strongest isolating one that works
    (SandboxUnavailable, saying what to install, when none does); "local" only by name, warned."""
    chosen = await choose_backend(backend, options or SandboxOptions())
    if chosen.warning:
        warnings.warn(
            f"learner tasks run in the local sandbox: {chosen.warning}", IsolationWarning, stacklevel=2
        )
    return cast(BackendName, chosen.name)


async def run_attempt(
    task: Task,
    commands: Iterable[str],
    backend: BackendName = "auto",
    options: SandboxOptions | None = None,
    *,
    with_reference_files: bool = False,
) -> AttemptResult:
    """Run `commands` in a fresh sandbox started from the task's workspace, then verify."""
    started = time.perf_counter()
    transcript: list[str] = []
    outputs: list[str] = []
    backend = await isolating_backend(backend, options)
    async with open_sandbox(backend, options=options) as sandbox:
        await prepare_workspace(task, sandbox)
        if with_reference_files:
            await _write_all(sandbox, task, task.reference_files)
        for command in commands:
            result = await sandbox.run(command, task.timeout_s)
            outputs.append(result.output)
            transcript.append(_render(result))
        if with_reference_files and task.reference_files:
            await sandbox.run("rm -rf -- " + " ".join(_top_levels(task.reference_files)), 30)
        passed, verdict = await _verdict(task, sandbox, AttemptTrace(tuple(outputs)))
    transcript.append(verdict)
    return AttemptResult(passed, "\n".join(transcript), time.perf_counter() - started)


async def run_reference(
    task: Task, backend: BackendName = "auto", options: SandboxOptions | None = None
) -> tuple[bool, str]:
    """Run the task's reference solution in a fresh sandbox: (passed, transcript)."""
    result = await run_attempt(task, task.reference, backend, options, with_reference_files=True)
    return result.passed, result.output


async def _verdict(task: Task, sandbox: Sandbox, trace: AttemptTrace) -> tuple[bool, str]:
    """(passed, the verdict rendered for a transcript)."""
    if task.outcome is None:
        check = await _check(task, sandbox)
        return check.ok, _render(check, prefix="verifier")
    if task.written_verifier:  # the written check judges the files; the answer is compared as ever
        check = await _check(task, sandbox)
        verdict = _render(check, prefix="verifier")
        answer = task.outcome.answer
        if answer is not None and not answer_matches(answer, trace):
            return False, verdict + f"\noutcome: the answer does not match {answer!r}"
        return check.ok, verdict
    end = await asyncio.to_thread(workspace_state, sandbox.workspace)
    differences = task.outcome.differences(diff(start_state(task), end), trace)
    if not differences:
        return True, "outcome: the reference's file changes and answer reproduced"
    return False, "outcome: " + "; ".join(differences)


async def _check(task: Task, sandbox: Sandbox) -> CommandResult:
    await _write_all(sandbox, task, task.verifier_files)
    return await sandbox.run(task.verifier, task.verifier_timeout_s)


async def _write_all(sandbox: Sandbox, task: Task, files: Mapping[str, FileContent]) -> None:
    for path, content in files.items():
        await sandbox.write_file(path, content, mode=_mode(task, path))


def _mode(task: Task, path: str) -> int:
    return 0o755 if path in task.executable else 0o644


def _materialise(task: Task, root: Path) -> None:
    """Write the task's files under `root` with fixed modes and times (blocking I/O)."""
    root.mkdir()
    for path, content in task.files.items():
        target = root / path
        target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)
        target.chmod(_mode(task, path))
    for directory, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.utime(Path(directory) / name, (FIXED_MTIME, FIXED_MTIME))


def _top_levels(paths: Iterable[str]) -> list[str]:
    return sorted({PurePosixPath(path).parts[0] for path in paths})


def _render(result: CommandResult, prefix: str = "$") -> str:
    status = "timed out" if result.timed_out else f"exit {result.exit_code}"
    return f"{prefix} {result.command}  [{status}, {result.duration_s:.2f} s]\n{result.output}".rstrip()
