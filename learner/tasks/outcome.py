"""The reference outcome of a task, and how an attempt is scored against it (InterCode-Bash style).

A task harvested from an episode has no hand-written verifier. Its reward is the *outcome* of
its reference commands, which an attempt must reproduce:

- **file changes**: the workspace's end state against its start state: paths created, changed
  (content, kind, or executable bit) and deleted. A file is its sha256 and whether its owner
  executable bit is set; a symlink is its target (never followed); a directory is its presence.
  File times, owners and every mode bit other than the executable bit are not compared.
- **ignored**: any path with a component whose name matches `IGNORED_NAMES` (shell patterns:
  caches such as `__pycache__/`, `.cache/`, `.pytest_cache/`, compiled `*.pyc`, editor swap
  and backup files such as `.*.swp`, `*~`, `.#*`), and everything under it. Ignored paths are
  left out of both states, so creating, changing or deleting them never counts.
- **answer**: the normalised output of the last reference command that printed something
  (anything but whitespace; stdout and stderr together); None when no command printed.
  `normalise_answer`: case folded, whitespace collapsed to one space, and a word that is a
  decimal number loses its trailing zeros (`3.50` -> `3.5`, `4.0` -> `4`; `v3.50`, `1.10.0`
  stay as they are).

An attempt scores 1 exactly when its file changes equal the reference's (same paths, same
contents and executable bits) and, when the reference has an answer, the attempt's answer
matches: the output of its last command that printed something normalises to the same text,
or, for a short answer (at most `SHORT_ANSWER_WORDS` words), its final answer text contains
the answer's words as a whole run of words (words compared with surrounding punctuation
stripped: "The count is 42." contains "42"). Otherwise it scores 0.

Invariant: the same workspace and outputs always give the same outcome (the functions here
are pure, the state reader aside), so replaying a deterministic reference twice agrees.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import Literal

IGNORED_NAMES = (
    "__pycache__", ".cache", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".ipynb_checkpoints",
    "*.pyc", "*.pyo", ".*.swp", ".*.swo", ".*.swx", "*~", ".#*", "#*#", ".DS_Store",
)  # fmt: skip
SHORT_ANSWER_WORDS = 8
_NUMBER = re.compile(r"[-+]?\d+\.\d+")
_EDGE_PUNCTUATION = ".,;:!?'\"()[]{}<>`"
_SHELL_STATUS = re.compile(
    r"^\[(exit -?\d+|timed out after [^\]]*)\]( \[timeout lowered[^\]]*\])?( \(no output\))?$"
)

EntryKind = Literal["file", "dir", "link"]


@dataclass(frozen=True)
class Entry:
    """One path of a workspace state: a file (content hash, executable bit), a symlink (hash of
    its target), or a directory."""

    kind: EntryKind
    sha256: str = ""
    executable: bool = False


State = dict[str, Entry]  # workspace-relative POSIX path -> entry, ignored paths left out


@dataclass(frozen=True)
class FileChanges:
    created: Mapping[str, Entry] = field(default_factory=dict)
    changed: Mapping[str, Entry] = field(default_factory=dict)  # path -> its new entry
    deleted: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.created or self.changed or self.deleted)

    def describe(self) -> str:
        parts = [
            f"{len(paths)} {verb}" for verb, paths in
            (("created", self.created), ("changed", self.changed), ("deleted", self.deleted)) if paths
        ]  # fmt: skip
        return ", ".join(parts) or "no file changes"


@dataclass(frozen=True)
class AttemptTrace:
    """What an attempt said besides its files: each command's output in order, and the final
    answer it gave (the executor's report; empty for bare commands)."""

    outputs: tuple[str, ...] = ()
    final_answer: str = ""


@dataclass(frozen=True)
class Outcome:
    """A reference outcome: the file changes it made and its normalised answer (None: none)."""

    changes: FileChanges
    answer: str | None = None

    @classmethod
    def observed(cls, start: State, end: State, outputs: Iterable[str]) -> Outcome:
        """The outcome of a run that turned `start` into `end`, printing `outputs`."""
        return cls(diff(start, end), last_answer(outputs))

    def differences(self, changes: FileChanges, trace: AttemptTrace) -> list[str]:
        """Why an attempt with `changes` and `trace` does not reproduce this outcome (empty: it does)."""
        found = _change_differences(self.changes, changes)
        if self.answer is not None and not answer_matches(self.answer, trace):
            found.append(f"the answer does not match {_short(self.answer)!r}")
        return found

    def end_state(self, start: State) -> State:
        """`start` with this outcome's changes applied."""
        end = {path: entry for path, entry in start.items() if path not in self.changes.deleted}
        end.update(self.changes.created)
        end.update(self.changes.changed)
        return end


def ignored(path: str) -> bool:
    """Whether `path` (workspace-relative) is left out of outcomes."""
    return any(fnmatchcase(part, pattern) for part in PurePosixPath(path).parts for pattern in IGNORED_NAMES)


def workspace_state(root: Path) -> State:
    """The state of the tree under `root` (blocking I/O; links are never followed)."""
    state: State = {}
    for directory, dirnames, filenames in os.walk(root):
        base = Path(directory)
        dirnames[:] = [name for name in dirnames if not ignored(name)]
        for name in dirnames + filenames:
            if ignored(name):
                continue
            full = base / name
            relative = full.relative_to(root).as_posix()
            try:
                info = full.lstat()
                if stat.S_ISLNK(info.st_mode):
                    state[relative] = Entry("link", _digest(os.readlink(full).encode()))
                elif stat.S_ISDIR(info.st_mode):
                    state[relative] = Entry("dir")
                elif stat.S_ISREG(info.st_mode):
                    executable = bool(info.st_mode & stat.S_IXUSR)
                    state[relative] = Entry("file", _file_digest(full), executable)
            except PermissionError:
                state[relative] = Entry("file", "unreadable")  # present, content unknown: never a match
            except FileNotFoundError:
                continue  # removed while walking: it is not part of the end state
    return state


def files_state(files: Mapping[str, str | bytes], executable: Iterable[str] = ()) -> State:
    """The state a workspace holding exactly `files` is in (their parent directories included)."""
    marked = set(executable)
    state: State = {}
    for path, content in files.items():
        if ignored(path):
            continue
        for parent in PurePosixPath(path).parents:
            if parent.parts:
                state.setdefault(parent.as_posix(), Entry("dir"))
        data = content.encode() if isinstance(content, str) else content
        state[path] = Entry("file", _digest(data), path in marked)
    return state


def diff(start: State, end: State) -> FileChanges:
    return FileChanges(
        created={path: entry for path, entry in sorted(end.items()) if path not in start},
        changed={
            path: entry for path, entry in sorted(end.items()) if path in start and start[path] != entry
        },
        deleted=frozenset(path for path in start if path not in end),
    )


def normalise_answer(text: str) -> str:
    """Case folded, whitespace collapsed, trailing zeros of decimal-number words dropped."""
    return " ".join(_number_word(word) for word in text.casefold().split())


def last_answer(outputs: Iterable[str]) -> str | None:
    """The normalised output of the last command in `outputs` that printed something."""
    printed = [output for output in outputs if output.strip()]
    return normalise_answer(printed[-1]) if printed else None


def answer_matches(answer: str, trace: AttemptTrace) -> bool:
    """Whether an attempt's answer matches the (normalised) reference `answer`."""
    if last_answer(trace.outputs) == answer:
        return True
    words = answer_words(answer)
    if not words or len(words) > SHORT_ANSWER_WORDS:
        return False
    return _contains(answer_words(trace.final_answer), words)


def shell_tool_output(observation: str) -> str:
    """A command's output from what the shell tool returned (runtime/tools/shell.py): without its
    `[exit N]` / `[timed out ...]` status line; empty for an `Error: ...` (the command never ran)."""
    if observation.startswith("Error: "):
        return ""
    head, _, last = observation.rpartition("\n")
    if _SHELL_STATUS.match(last):
        return head
    return "" if _SHELL_STATUS.match(observation) else observation


def _change_differences(reference: FileChanges, attempt: FileChanges) -> list[str]:
    found = []
    expected = {**reference.created, **reference.changed}
    actual = {**attempt.created, **attempt.changed}
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    wrong = sorted(path for path in set(expected) & set(actual) if expected[path] != actual[path])
    for words, paths in (("not made", missing), ("made but not by the reference", extra), ("differs", wrong)):
        if paths:
            found.append(f"{_paths(paths)} {words}")
    not_deleted = sorted(reference.deleted - attempt.deleted)
    wrongly_deleted = sorted(attempt.deleted - reference.deleted)
    if not_deleted:
        found.append(f"{_paths(not_deleted)} not deleted")
    if wrongly_deleted:
        found.append(f"{_paths(wrongly_deleted)} deleted but not by the reference")
    return found


def _number_word(word: str) -> str:
    if not _NUMBER.fullmatch(word):
        return word
    whole, fraction = word.split(".")
    fraction = fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def answer_words(text: str) -> list[str]:
    """The words of `text` normalised, each stripped of surrounding punctuation (for containment)."""
    stripped = (word.strip(_EDGE_PUNCTUATION) for word in normalise_answer(text).split())
    return [_number_word(word) for word in stripped if word]


def _contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    width = len(needle)
    return any(
        list(haystack[start : start + width]) == list(needle) for start in range(len(haystack) - width + 1)
    )


def _paths(paths: list[str], shown: int = 3) -> str:
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return ", ".join(paths[:shown]) + more


def _short(text: str, chars: int = 60) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
