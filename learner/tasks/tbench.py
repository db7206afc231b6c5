"""Importing task folders in the terminal-bench 2 / Harbor layout.

    my-task/
      instruction.md        what the executor is told                       (required)
      task.toml             metadata, timeouts                              (optional here)
      environment/          Dockerfile + files: the files become the workspace
      tests/test.sh         the verifier: `bash tests/test.sh`, exit 0 = success  (required)
      solution/solve.sh     the reference: `bash solution/solve.sh`          (optional)

`tests/` and `solution/` are never part of the workspace an attempt sees: they are copied in
when the verifier (or the reference) runs (see attempts.py). Without Docker, the files of
`environment/` (not the Dockerfile) are the workspace; `Task.docker_needs` says why a task
would need its own image instead (environment.py), and such a task cannot run here.

task.toml is read leniently: `[metadata] difficulty` (easy/medium/hard or 1-3), `category`
(the task's family), `tags`, `[task] keywords`, `[agent] timeout_sec`, `[verifier] timeout_sec`;
anything missing gets a default, anything else is ignored.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from learner.tasks.environment import docker_needs, workspace_files
from learner.tasks.file_tree import MAX_TASK_BYTES, read_tree
from learner.tasks.task import FileContent, Split, Task, TaskFormatError

VERIFIER = "bash tests/test.sh"
REFERENCE = "bash solution/solve.sh"
DEFAULT_TIMEOUT_S = 120.0
DIFFICULTIES = {"trivial": 1, "easy": 1, "medium": 2, "hard": 3}


@dataclass(frozen=True)
class SkippedFolder:
    path: Path
    reason: str


@dataclass
class ImportedTasks:
    """What `import_tasks` found: the tasks (with their folders) and the folders it skipped."""

    tasks: list[Task] = field(default_factory=list)
    folders: dict[str, Path] = field(default_factory=dict)  # task id -> its folder
    skipped: list[SkippedFolder] = field(default_factory=list)


def is_task_dir(path: Path) -> bool:
    return (Path(path) / "instruction.md").is_file()


def import_tasks(path: Path, split: Split = "heldout") -> ImportedTasks:
    """Every task folder directly under `path` (or `path` itself when it is one), sorted by
    name; sub-folders that are not tasks are skipped with the reason. Hidden folders and plain
    files are ignored."""
    path = Path(path)
    if not path.is_dir():
        raise TaskFormatError(f"{path} is not a directory")
    found = ImportedTasks()
    folders = (
        [path]
        if is_task_dir(path)
        else sorted(entry for entry in path.iterdir() if entry.is_dir() and not entry.name.startswith("."))
    )
    for folder in folders:
        try:
            task = load_task_dir(folder, split)
        except TaskFormatError as error:
            found.skipped.append(SkippedFolder(folder, str(error)))
            continue
        found.tasks.append(task)
        found.folders[task.id] = folder
    return found


def load_task_dir(path: Path, split: Split = "heldout") -> Task:
    """The task in the folder `path`; TaskFormatError says what is missing or malformed."""
    path = Path(path)
    if not is_task_dir(path):
        raise TaskFormatError("no instruction.md: not a task folder")
    if not (path / "tests" / "test.sh").is_file():
        raise TaskFormatError("no tests/test.sh: the task has no verifier")
    instruction = _text(path / "instruction.md").strip()
    if not instruction:
        raise TaskFormatError("instruction.md is empty")
    config = _task_toml(path / "task.toml")
    environment, env_executable = read_tree(path / "environment")
    tests, tests_executable = read_tree(path / "tests", prefix="tests/")
    solution, solution_executable = read_tree(path / "solution", prefix="solution/")
    files = workspace_files(environment)
    if (
        sum(len(content) for content in [*files.values(), *tests.values(), *solution.values()])
        > MAX_TASK_BYTES
    ):
        raise TaskFormatError(f"the task is larger than {MAX_TASK_BYTES >> 20} MiB")
    metadata, name = _table(config, "metadata"), path.name
    scripts = [instruction, *_texts(tests), *_texts(solution)]
    return Task(
        id=name,
        family=str(metadata.get("category") or "tbench"),
        instruction=instruction,
        files=files,
        verifier=VERIFIER,
        reference=(REFERENCE,) if "solution/solve.sh" in solution else (),
        split=split,
        timeout_s=_seconds(_table(config, "agent").get("timeout_sec")),
        source=f"tbench:{name}",
        difficulty=_difficulty(metadata.get("difficulty")),
        verifier_timeout_s=_seconds(_table(config, "verifier").get("timeout_sec")),
        executable=frozenset(env_executable & set(files)) | tests_executable | solution_executable,
        verifier_files=tests,
        reference_files=solution,
        tags=_tags(metadata.get("tags"), _table(config, "task").get("keywords")),
        docker_needs=(*docker_needs(environment, scripts), *_clashes(files)),
    )


def _clashes(files: dict[str, FileContent]) -> list[str]:
    """Workspace folders that the hidden tests/ or solution/ would be copied over."""
    return [
        f"its environment has its own {top}/, where the task's {top}/ would be copied"
        for top in ("tests", "solution")
        if any(path.startswith(top + "/") for path in files)
    ]


def _task_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(_text(path))
    except tomllib.TOMLDecodeError as error:
        raise TaskFormatError(f"task.toml is not valid TOML: {error}") from None


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TaskFormatError(f"{path.name} is not UTF-8 text") from None


def _texts(files: dict[str, FileContent]) -> list[str]:
    return [content for content in files.values() if isinstance(content, str)]


def _table(config: dict[str, Any], name: str) -> dict[str, Any]:
    value = config.get(name)
    return value if isinstance(value, dict) else {}


def _seconds(value: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return DEFAULT_TIMEOUT_S


def _difficulty(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 3:
        return value
    if isinstance(value, str):
        return DIFFICULTIES.get(value.strip().lower())
    return None


def _tags(*lists: object) -> tuple[str, ...]:
    tags = [str(tag) for values in lists if isinstance(values, list) for tag in values]
    return tuple(dict.fromkeys(tags))
