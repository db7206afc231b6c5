"""The task record: something the executor is asked to do, where it starts, and how it is checked.

A `Task` is replayable by construction: its initial workspace is in `files`, its check is a
shell command (`verifier`, exit 0 = success) run in the workspace after the attempt, and
`reference` holds shell commands that solve it (empty when an imported task has no solution).
Files the attempt must not see live apart from the workspace and are copied in only when they
are needed: `verifier_files` (a terminal-bench task's `tests/`) just before the verifier runs,
`reference_files` (its `solution/`) just before the reference runs, and removed after it.

A task harvested from an episode (learner/tasks/episodes.py) is scored by its `outcome` instead
of a shell verifier: the file changes and answer its reference produced, which an attempt must
reproduce (learner/tasks/outcome.py). Its `verifier` is then `OUTCOME_VERIFIER`, a command that
fails, so that code which ignores the outcome can never pass an attempt. Such a task may carry a
planner-written check instead (`written_verifier`, learner/tasks/written_verifier.py): then its
`verifier` and `verifier_files` judge the workspace in place of the outcome's file changes, and
the outcome's answer is still compared.

`reference_actions` renders a self-contained reference as the executor's JSON actions: one
action running the commands, then one `task_complete` action. That is the target of supervised
warm-start, in exactly the format the executor is parsed against (runtime/executor/actions.py).

Exceptions: TaskError > TaskFormatError (a task folder that cannot be read as a task).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from learner.tasks.outcome import Outcome

Split = Literal["train", "heldout"]
FileContent = str | bytes

MAX_COMMANDS_PER_ACTION = 8  # runtime/executor/actions.py refuses more in one turn
RUN_ANALYSIS = "Run the commands that do the task."
DONE_ANALYSIS = "Done: the commands ran."
OUTCOME_VERIFIER = "echo 'scored by the reference outcome (learner/tasks/outcome.py)' >&2; exit 1"


class TaskError(Exception):
    """A task that cannot be used as asked; the message says why."""


class TaskFormatError(TaskError):
    """A folder that is not a readable task (missing instruction.md, bad task.toml, ...)."""


@dataclass(frozen=True)
class Task:
    """One verifiable terminal task. Paths in the file maps are relative to the workspace."""

    id: str
    family: str
    instruction: str
    files: Mapping[str, FileContent] = field(hash=False)
    verifier: str
    reference: tuple[str, ...] = ()
    split: Split = "train"
    timeout_s: float = 30.0  # per command of an attempt (and of the reference)
    source: str = "synthetic"  # or "tbench:<folder name>"
    difficulty: int | None = None  # 1 (one short command) .. 3; None when unknown
    verifier_timeout_s: float = 60.0
    executable: frozenset[str] = frozenset()  # paths (in any of the file maps) made mode 755
    verifier_files: Mapping[str, FileContent] = field(default_factory=dict, hash=False)
    reference_files: Mapping[str, FileContent] = field(default_factory=dict, hash=False)
    tags: tuple[str, ...] = ()
    docker_needs: tuple[str, ...] = ()  # why it needs its own image; empty: runs in any sandbox
    outcome: Outcome | None = field(default=None, hash=False)  # when set, it scores, not `verifier`
    written_verifier: bool = False  # with an outcome: `verifier` judges the files, the outcome the answer

    def __post_init__(self) -> None:
        if self.split not in ("train", "heldout"):
            raise TaskError(f"task {self.id}: split must be train or heldout, not {self.split!r}")
        for files in (self.files, self.verifier_files, self.reference_files):
            for path in files:
                pure = PurePosixPath(path)
                if pure.is_absolute() or not pure.parts or ".." in pure.parts:
                    raise TaskError(f"task {self.id}: {path!r} is not a path inside the workspace")

    @property
    def needs_docker(self) -> bool:
        return bool(self.docker_needs)

    @property
    def has_reference(self) -> bool:
        return bool(self.reference)


def reference_actions(task: Task) -> list[str]:
    """The reference solution as executor action texts (JSON, one per model turn).

    Raises TaskError when the task has no reference, or one that needs files the executor never
    sees (an imported `solution/solve.sh`): such a reference is no target for the executor.
    """
    if not task.reference:
        raise TaskError(f"task {task.id} has no reference solution")
    if task.reference_files:
        raise TaskError(
            f"task {task.id}'s reference runs files the executor does not see "
            f"({', '.join(sorted(task.reference_files))}); it cannot be rendered as actions"
        )
    timeout = max(1, round(task.timeout_s))
    actions = []
    for start in range(0, len(task.reference), MAX_COMMANDS_PER_ACTION):
        chunk = task.reference[start : start + MAX_COMMANDS_PER_ACTION]
        commands = [{"keystrokes": command + "\n", "timeout": timeout} for command in chunk]
        actions.append(_action(RUN_ANALYSIS, commands, complete=False))
    actions.append(_action(DONE_ANALYSIS, [], complete=True))
    return actions


def _action(analysis: str, commands: list[dict[str, object]], *, complete: bool) -> str:
    # Key order as in the executor's system prompt: the target reads like what it is asked for.
    return json.dumps({"analysis": analysis, "commands": commands, "task_complete": complete})
