"""The skill library on disk: `<root>/<name>/SKILL.md` and its files, every version kept.

    <root>/<name>/SKILL.md, scripts/, references/, assets/    the skills in use
    <root>/.archive/<name>/                                   archived: out of the index, restorable
    <root>/.history/<name>/<version>/                         every version, as a copy of the folder
    <root>/.history/<name>/log.jsonl                          one line per version: number, time, note

The files are the source of truth: a person may read, edit, copy or version them with any tool.
Every write made through the library (create, patch, write_file, remove_file, restore,
metadata) is validated against the format (skills/format.py) and scanned (skills/scan.py)
before anything on disk changes, then kept as a new version. A hand edit made since the last
version is kept as a version of its own ("edited on disk") before the next write replaces it.

Invariants: a name is checked against the format's pattern before it becomes a path, and a
file path must stay inside `scripts/`, `references/` or `assets/` of its skill; a refused
write leaves the folder as it was; files are replaced atomically (write, then rename).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from skills.errors import PatchError, SkillBlocked, SkillError, SkillExists, SkillFormatError, SkillNotFound
from skills.format import NAME_PATTERN, SKILL_FILE, Problem, SkillDocument, parse
from skills.scan import Finding, blocking, scan_skill

HISTORY = ".history"
ARCHIVE = ".archive"
FILE_DIRS = ("scripts", "references", "assets")
MAX_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class SkillEntry:
    """An active skill's SKILL.md as the file system sees it (what an index sync compares)."""

    name: str
    path: Path
    mtime_ns: int
    size: int


@dataclass(frozen=True)
class Version:
    number: int
    at: float
    note: str


@dataclass(frozen=True)
class Edit:
    """Replace the one occurrence of `old` in SKILL.md with `new`."""

    old: str
    new: str


@dataclass(frozen=True)
class Written:
    document: SkillDocument
    version: int
    warnings: list[Finding] = field(default_factory=list)


class SkillLibrary:
    def __init__(self, root: Path) -> None:
        self.root = root

    # --- reading ---------------------------------------------------------------------------

    def entries(self) -> list[SkillEntry]:
        """The active skills, by name, with their SKILL.md's mtime and size (stat only)."""
        found = []
        if not self.root.is_dir():
            return []
        for child in os.scandir(self.root):
            if child.name.startswith(".") or not child.is_dir():
                continue
            try:
                stat = os.stat(os.path.join(child.path, SKILL_FILE))
            except FileNotFoundError:
                continue
            found.append(SkillEntry(child.name, Path(child.path), stat.st_mtime_ns, stat.st_size))
        return sorted(found, key=lambda entry: entry.name)

    def names(self) -> list[str]:
        return [entry.name for entry in self.entries()]

    def archived(self) -> list[str]:
        folder = self.root / ARCHIVE
        return (
            sorted(p.name for p in folder.iterdir() if (p / SKILL_FILE).is_file()) if folder.is_dir() else []
        )

    def exists(self, name: str) -> bool:
        return (self.folder(name) / SKILL_FILE).is_file()

    def folder(self, name: str, *, archived: bool = False) -> Path:
        if not NAME_PATTERN.fullmatch(name) or len(name) > 64:
            raise SkillNotFound(f"{name!r} is not a skill name (a-z, 0-9 and single hyphens)")
        return self.root / ARCHIVE / name if archived else self.root / name

    def text(self, name: str) -> str:
        path = self.folder(name) / SKILL_FILE
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            hint = " (it is archived: restore it first)" if name in self.archived() else ""
            raise SkillNotFound(f"no skill named {name!r}{hint}") from None

    def load(self, name: str) -> SkillDocument:
        return parse(self.text(name), folder_name=name)

    def file_names(self, name: str) -> list[str]:
        """The skill's files besides SKILL.md, as relative paths."""
        return sorted(path for path in read_folder(self.folder(name)) if path != SKILL_FILE)

    def read_file(self, name: str, relative: str) -> str:
        path = self.folder(name) / _inside(relative, anywhere=True)
        if not path.is_file():
            known = ", ".join(self.file_names(name)) or "none"
            raise SkillNotFound(f"skill {name!r} has no file {relative!r} (its files: {known})")
        data = path.read_bytes()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return f"({len(data)} bytes of binary data)"

    # --- writing ---------------------------------------------------------------------------

    def create(
        self, document: SkillDocument, files: Mapping[str, bytes] | None = None, note: str = "created"
    ) -> Written:
        if self.exists(document.name):
            raise SkillExists(f"a skill named {document.name!r} exists; patch it, or pick another name")
        if (self.folder(document.name, archived=True) / SKILL_FILE).is_file():
            raise SkillExists(
                f"an archived skill is named {document.name!r}; restore it (temper skills restore) or pick another name"
            )
        contents = {_inside(path, anywhere=True): data for path, data in (files or {}).items()}
        contents[SKILL_FILE] = document.render().encode()
        return self._write(document.name, contents, note)

    def update(self, document: SkillDocument, note: str) -> Written:
        """Replace an existing skill's SKILL.md (its other files stay)."""
        contents = self._contents(document.name)
        contents[SKILL_FILE] = document.render().encode()
        return self._write(document.name, contents, note)

    def patch(self, name: str, edits: Sequence[Edit], note: str = "patched") -> Written:
        """Apply minimal edits to SKILL.md: each `old` must occur exactly once."""
        if not edits:
            raise PatchError("a patch needs at least one edit (old -> new)")
        text = self.text(name)
        for number, edit in enumerate(edits, 1):
            count = text.count(edit.old) if edit.old else 0
            if count != 1:
                where = (
                    "is empty"
                    if not edit.old
                    else "is not in SKILL.md"
                    if count == 0
                    else f"occurs {count} times"
                )
                raise PatchError(
                    f"edit {number}: its old text {where}; quote a unique passage of the current SKILL.md "
                    "(skill_view shows it)"
                )
            text = text.replace(edit.old, edit.new, 1)
        contents = self._contents(name)
        contents[SKILL_FILE] = text.encode()
        return self._write(name, contents, note)

    def set_metadata(self, name: str, note: str, **updates: str | None) -> Written:
        return self.update(self.load(name).with_metadata(**updates), note)

    def write_file(self, name: str, relative: str, content: str, note: str = "") -> Written:
        contents = self._contents(name)
        contents[_inside(relative)] = content.encode()
        return self._write(name, contents, note or f"wrote {relative}")

    def remove_file(self, name: str, relative: str, note: str = "") -> Written:
        contents = self._contents(name)
        path = _inside(relative)
        if contents.pop(path, None) is None:
            raise SkillNotFound(f"skill {name!r} has no file {relative!r}")
        return self._write(name, contents, note or f"removed {relative}")

    def archive(self, name: str) -> None:
        source, target = self.folder(name), self.folder(name, archived=True)
        if not (source / SKILL_FILE).is_file():
            raise SkillNotFound(f"no skill named {name!r}")
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        source.rename(target)
        self._log(name, self._next_version(name) - 1, "archived")

    def restore(self, name: str) -> None:
        """Bring an archived skill back into use."""
        source, target = self.folder(name, archived=True), self.folder(name)
        if not (source / SKILL_FILE).is_file():
            raise SkillNotFound(f"no archived skill named {name!r}")
        if target.exists():
            raise SkillExists(f"a skill named {name!r} is in use; remove or rename it first")
        source.rename(target)
        self._log(name, self._next_version(name) - 1, "restored from the archive")

    def remove(self, name: str) -> None:
        """Delete a skill for good: its folder (in use or archived) and its history."""
        folders = [self.folder(name), self.folder(name, archived=True), self.root / HISTORY / name]
        if not any(folder.exists() for folder in folders[:2]):
            raise SkillNotFound(f"no skill named {name!r}")
        for folder in folders:
            if folder.exists():
                shutil.rmtree(folder)

    # --- history ---------------------------------------------------------------------------

    def history(self, name: str) -> list[Version]:
        log = self.root / HISTORY / self.folder(name).name / "log.jsonl"
        if not log.is_file():
            return []
        versions = []
        for line in log.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            versions.append(Version(record["version"], record["at"], record["note"]))
        return versions

    def version_text(self, name: str, number: int) -> str:
        path = self.root / HISTORY / self.folder(name).name / str(number) / SKILL_FILE
        if not path.is_file():
            raise SkillNotFound(f"skill {name!r} has no version {number}")
        return path.read_text(encoding="utf-8")

    def restore_version(self, name: str, number: int) -> Written:
        """Make version `number` current again (as a new version: nothing is lost)."""
        snapshot = self.root / HISTORY / self.folder(name).name / str(number)
        if not (snapshot / SKILL_FILE).is_file():
            raise SkillNotFound(f"skill {name!r} has no version {number}")
        if not self.exists(name):
            raise SkillNotFound(f"skill {name!r} is not in use; restore it from the archive first")
        return self._write(name, read_folder(snapshot), f"restored version {number}")

    # --- internals -------------------------------------------------------------------------

    def _contents(self, name: str) -> dict[str, bytes]:
        if not self.exists(name):
            self.text(name)  # raises SkillNotFound with the archive hint
        return read_folder(self.folder(name))

    def _write(self, name: str, contents: dict[str, bytes], note: str) -> Written:
        current = read_folder(self.folder(name)) if self.exists(name) else None
        latest = self._next_version(name) - 1
        edited = current is not None and current != self._snapshot_files(name, latest)
        version = latest + 1 + int(edited)
        text = contents[SKILL_FILE].decode("utf-8", errors="replace")
        document = parse(text, folder_name=name).with_metadata(version=str(version))  # before any change
        contents = {**contents, SKILL_FILE: document.render().encode()}
        for path, data in contents.items():
            if len(data) > MAX_FILE_BYTES:
                raise SkillFormatError(
                    [Problem(path, f"is {len(data)} bytes; files are limited to {MAX_FILE_BYTES}")]
                )
        findings = scan_skill(_texts(contents))
        if blocked := blocking(findings):
            raise SkillBlocked(blocked)
        if current is not None and edited:
            self._snapshot(name, latest + 1, current, "edited on disk")
        folder = self.folder(name)
        for path in set(current or {}) - set(contents):
            (folder / path).unlink()
        for path, data in contents.items():
            _replace(folder / path, data)
        self._snapshot(name, version, contents, note)
        return Written(document, version, findings)

    def _next_version(self, name: str) -> int:
        versions = self.history(name)
        return max((v.number for v in versions), default=0) + 1

    def _snapshot_files(self, name: str, number: int) -> dict[str, bytes] | None:
        snapshot = self.root / HISTORY / name / str(number)
        return read_folder(snapshot) if number > 0 and snapshot.is_dir() else None

    def _snapshot(self, name: str, number: int, contents: Mapping[str, bytes], note: str) -> None:
        snapshot = self.root / HISTORY / name / str(number)
        if snapshot.exists():
            shutil.rmtree(snapshot)
        for path, data in contents.items():
            _replace(snapshot / path, data)
        self._log(name, number, note)

    def _log(self, name: str, number: int, note: str) -> None:
        log = self.root / HISTORY / name / "log.jsonl"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"version": number, "at": time.time(), "note": note}) + "\n")


def _inside(relative: str, *, anywhere: bool = False) -> str:
    """`relative` as a clean relative path inside a skill folder; one the model writes must lie
    in scripts/, references/ or assets/ (`anywhere` allows any, as imported skills have)."""
    path = PurePosixPath(relative.replace("\\", "/"))
    parts = path.parts
    clean = (
        bool(parts)
        and not path.is_absolute()
        and not any(p in ("..", ".") or p.startswith(".") for p in parts)
    )
    if clean and (anywhere or (len(parts) >= 2 and parts[0] in FILE_DIRS)):
        return path.as_posix()
    raise SkillError(
        f"{relative!r} is not a skill file path: use scripts/NAME, references/NAME or assets/NAME"
    )


def _texts(contents: Mapping[str, bytes]) -> dict[str, str]:
    texts = {}
    for path, data in contents.items():
        try:
            texts[path] = data.decode("utf-8")
        except UnicodeDecodeError:
            if path.startswith("scripts/"):
                raise SkillBlocked(
                    [Finding("block", path, 1, "binary-script", "a binary script cannot be reviewed")]
                ) from None
    return texts


def _replace(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    partial.replace(path)


def read_folder(folder: Path) -> dict[str, bytes]:
    """A folder's files (relative posix path -> bytes), dot files and dot folders left out."""
    found = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            found[relative.as_posix()] = path.read_bytes()
    return found
