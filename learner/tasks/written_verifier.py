"""Planner-written checks for the night's episode tasks, kept only when they tell done from not done.

    written = await write_verifiers(tasks, planner, VerifierSettings(calls=4), backend="bwrap")
    written.tasks      the same tasks, in order; those whose check was kept carry it
    written.line()     "planner-written checks: 3 of 4 calls made, 1 kept; refused: 1 failed on ..."

A task harvested from an episode is scored by its reference outcome (outcome.py): an attempt
must reproduce the reference's exact file changes. That refuses other correct ways of doing the
task (a scratch file left behind, the same data written with other whitespace or order). So,
for at most `calls` tasks a night (0: off), the planner is asked for a bash script that checks
what the instruction asks for: the instruction, the reference commands, the start files and the
reference end state (files created or changed with their content, paths deleted, the answer) go
in; `{"script": "..."}` (`WrittenCheck`, JSON) comes back. The script is kept only when, in
fresh isolating sandboxes (`check_task`, as `temper tasks check` runs things), it exits 0 after
the reference ran and non-zero on the start state. Otherwise, or when the reply is not the
schema, or the planner cannot be reached (no more calls that night), the task keeps the outcome
rule; nothing here fails the night, a sandbox that cannot start aside.

The rule for a kept check: it *replaces* the comparison of file changes, and the answer (when
the reference printed one) is still compared as outcome.py does (a check sees only files; an
attempt's answer is in what it printed). Required in addition, it could never change a reward:
an attempt that reproduces the reference end state exactly passes a check that passed on that
state. A replay runs it as the task's `verifier` (`bash .temper-check/test.sh`, copied in only
after the attempt); `export_task` writes it as `tests/check.sh`, which `tests/test.sh` runs
before it checks the answer file.

Only tasks whose reference changed files are sent (a check of files cannot tell an answer-only
task's end state from its start). The prompt holds only what the episode and its workspace
hold; a task whose prompt memory's redactor finds a secret in (configured or detected) is not
sent. Kept scripts are saved in `saved/` (`saved_name`) when a directory is given: a task seen
again (a resumed night, a held-out task checked again) reuses its script, re-checked, with no
call.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from learner.tasks.attempts import isolating_backend, prepare_workspace
from learner.tasks.soundness import check_task
from learner.tasks.task import FileContent, Task
from memory import Redactor
from runtime.models import ChatModel, ModelError
from runtime.sandbox import BackendName, SandboxOptions, open_sandbox

CHECK_FILE = ".temper-check/test.sh"  # in the workspace only while the check runs
CHECK_COMMAND = f"bash {CHECK_FILE}"
MALFORMED, FAILED_REFERENCE, PASSED_START, UNREACHABLE = (
    "malformed reply", "failed on the reference", "passed on the start state", "planner unreachable",
)  # fmt: skip
FILE_CHARS = 2_000  # of each file shown to the planner
FILES_SHOWN = 20  # per side (start, end)
MAX_SCRIPT_CHARS = 20_000
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)

SYSTEM = """You write the check of a terminal task: a bash script that runs in the task's working \
directory after someone attempted the task, without network, and exits 0 when the task was done \
and non-zero (saying why) when it was not.

It must pass on the reference end state you are shown and fail on the start state. Check what \
the instruction asks for, and accept other correct ways of doing it: do not require details the \
instruction leaves open (exact whitespace, the order of lines it does not fix, scratch files left \
behind). Use standard tools only (bash, coreutils, grep, sed, awk, diff, sort). Do not change any \
file. Refer to files by relative paths. An answer the task printed is checked separately: check \
the files.

Reply with only a JSON object: {"script": "<the bash script>"}"""


@dataclass(frozen=True)
class VerifierSettings:
    calls: int = 0  # planner calls a night ([learner] verifier_calls); 0: off
    secrets: tuple[str, ...] = field(default=(), repr=False)  # configured secrets: never sent


class WrittenCheck(BaseModel):
    """The planner's reply (the structured-output schema)."""

    model_config = ConfigDict(extra="ignore")

    script: str = Field(min_length=1, max_length=MAX_SCRIPT_CHARS)


@dataclass
class WrittenVerifiers:
    """What a night's checks came to: the tasks (in order) and the counts."""

    budget: int
    tasks: list[Task] = field(default_factory=list)
    calls: int = 0  # planner calls made (one that could not reach the planner included)
    kept: list[str] = field(default_factory=list)  # task ids now scored by a written check
    reused: int = 0  # of `kept`, scripts saved earlier and checked again, with no call
    refused: list[tuple[str, str]] = field(default_factory=list)  # (task id, reason)
    withheld: int = 0  # tasks not sent: their prompt held a secret
    error: str = ""  # why calls stopped early

    def line(self) -> str:
        if self.budget == 0:
            return "planner-written checks: off ([learner] verifier_calls = 0)"
        text = f"planner-written checks: {self.calls} of {self.budget} calls made, {len(self.kept)} kept"
        if self.reused:
            text += f" ({self.reused} saved earlier)"
        reasons: dict[str, int] = {}
        for _, reason in self.refused:
            reasons[reason] = reasons.get(reason, 0) + 1
        if reasons:
            text += "; refused: " + ", ".join(f"{count} {reason}" for reason, count in reasons.items())
        if self.withheld:
            text += f"; {self.withheld} not sent (a secret in the prompt)"
        return text + (f"; {self.error}" if self.error else "")


async def write_verifiers(
    tasks: Sequence[Task],
    planner: ChatModel | None,
    settings: VerifierSettings,
    *,
    backend: BackendName = "auto",
    options: SandboxOptions | None = None,
    saved: Path | None = None,
) -> WrittenVerifiers:
    """`tasks` with planner-written checks where they were kept; see the module docstring."""
    result = WrittenVerifiers(budget=settings.calls)
    if settings.calls == 0:
        result.tasks = list(tasks)
        return result
    backend = await isolating_backend(backend, options)
    redactor = Redactor.for_secrets(settings.secrets)
    for task in tasks:
        result.tasks.append(await _one(task, planner, redactor, result, backend, options, saved))
    return result


async def _one(
    task: Task,
    planner: ChatModel | None,
    redactor: Redactor,
    result: WrittenVerifiers,
    backend: BackendName,
    options: SandboxOptions | None,
    saved: Path | None,
) -> Task:
    """`task`, with a check when one was kept; `result` counts what happened."""
    if task.outcome is None or not task.outcome.changes or task.written_verifier or task.needs_docker:
        return task
    path = None if saved is None else saved / saved_name(task)
    if path is not None and path.is_file():
        checked, _ = await _checked(task, path.read_text(encoding="utf-8"), backend, options)
        if checked is not None:
            result.kept.append(task.id)
            result.reused += 1
            return checked
        path.unlink()  # it no longer tells done from not done
    if planner is None or result.error or result.calls >= result.budget:
        return task
    request = await _request(task, backend, options)
    if redactor.text(request).found:
        result.withheld += 1
        return task
    result.calls += 1
    try:
        reply = await planner.complete([
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": request},
        ])  # fmt: skip
    except ModelError as error:
        result.refused.append((task.id, UNREACHABLE))
        result.error = f"no more calls tonight: {error}"
        return task
    script = parse_check(reply.text)
    if script is None:
        result.refused.append((task.id, MALFORMED))
        return task
    checked, reason = await _checked(task, script, backend, options)
    if checked is None:
        result.refused.append((task.id, reason))
        return task
    result.kept.append(task.id)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(script, encoding="utf-8")
    return checked


def saved_name(task: Task) -> str:
    """The file a kept check of `task` is saved in: its id and a digest of its instruction and
    reference, so that a task id used again for another task (a new database) finds nothing."""
    digest = hashlib.sha256(json.dumps([task.instruction, task.reference]).encode()).hexdigest()
    return f"{task.id}-{digest[:12]}.sh"


def parse_check(text: str) -> str | None:
    """The script of a reply in the `WrittenCheck` schema (a bash shebang added when it has
    none); None when the reply is not that schema."""
    match = _JSON_OBJECT.search(text)
    try:
        reply: Any = json.loads(match.group(0)) if match else None
        check = WrittenCheck.model_validate(reply)
    except (json.JSONDecodeError, ValidationError):
        return None
    script = check.script.strip()
    if not script:
        return None
    return (script if script.startswith("#!") else "#!/bin/bash\n" + script) + "\n"


async def _checked(
    task: Task, script: str, backend: BackendName, options: SandboxOptions | None
) -> tuple[Task | None, str]:
    """`task` scored by `script` when the script passes after the reference and fails on the
    start state (each in a fresh sandbox); else (None, why not)."""
    written = replace(task, verifier=CHECK_COMMAND, verifier_files={CHECK_FILE: script})
    check = await check_task(replace(written, outcome=None), backend, options)
    if check.reference_passed is not True:
        return None, FAILED_REFERENCE
    if check.empty_failed is not True:
        return None, PASSED_START
    return replace(written, written_verifier=True), ""


async def _request(task: Task, backend: BackendName, options: SandboxOptions | None) -> str:
    """The planner's request: the instruction, the reference, the start and end states."""
    outcome = task.outcome
    assert outcome is not None  # _one sends only tasks with an outcome
    made = [path for path, entry in {**outcome.changes.created, **outcome.changes.changed}.items()
            if entry.kind == "file"]  # fmt: skip
    end = await _reference_end(task, made, backend, options)
    parts = [
        f"Instruction:\n{task.instruction}",
        "Reference commands (they did the task):\n" + "\n".join(f"$ {c}" for c in task.reference),
        "Start state (the files before):\n" + _files(task.files),
        "Reference end state (files created or changed, as the reference left them):\n" + _files(end),
    ]
    if outcome.changes.deleted:
        parts.append("Deleted by the reference: " + ", ".join(sorted(outcome.changes.deleted)))
    if outcome.answer is not None:
        parts.append(f"The answer it printed (checked separately): {outcome.answer}")
    return "\n\n".join(parts)


async def _reference_end(
    task: Task, paths: list[str], backend: BackendName, options: SandboxOptions | None
) -> dict[str, FileContent]:
    """The files at `paths` after the reference ran in a fresh sandbox."""
    async with open_sandbox(backend, options=options) as sandbox:
        await prepare_workspace(task, sandbox)
        for command in task.reference:
            await sandbox.run(command, task.timeout_s)
        return await asyncio.to_thread(_read, sandbox.workspace, paths)


def _read(root: Path, paths: list[str]) -> dict[str, FileContent]:
    files: dict[str, FileContent] = {}
    for path in paths:
        try:
            data = (root / path).read_bytes()
        except OSError:
            continue  # gone or unreadable: shown as not there
        try:
            files[path] = data.decode("utf-8")
        except UnicodeDecodeError:
            files[path] = data
    return files


def _files(files: Mapping[str, FileContent]) -> str:
    """Files for the prompt: each path and its content (cut), at most FILES_SHOWN of them."""
    shown = []
    for path in sorted(files)[:FILES_SHOWN]:
        content = files[path]
        if isinstance(content, bytes):
            shown.append(f"--- {path} (binary, {len(content)} bytes)")
            continue
        cut = content if len(content) <= FILE_CHARS else content[:FILE_CHARS] + "\n…(cut)"
        shown.append(f"--- {path} ({len(content)} characters)\n{cut}")
    more = len(files) - FILES_SHOWN
    return "\n".join(shown + ([f"… and {more} more files"] if more > 0 else [])) or "(no files)"
