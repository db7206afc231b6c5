"""Executor adapter versions on disk: immutable version folders, a `current` pointer, a history.

    <data_dir>/executor/
        versions/v1/adapter_config.json        PEFT format, as `LocalModel.load_adapter` and
        versions/v1/adapter_model.safetensors  vLLM's /v1/load_lora_adapter read it
        versions/v1/meta.json                  VersionMeta: when, base model, parent, training, gate
        versions/v2/...
        current                                the current version's name, one line
        history.jsonl                          one JSON line per pointer move (promote, rollback)
        .lock                                  held (flock) while a version or the pointer changes

    versions = ExecutorVersions(data_dir)
    versions.current()          # Version | None
    versions.list_versions()   # oldest first

promote.py moves the pointer; this module only keeps the store. Invariants:
- A version folder appears whole or not at all: it is filled under a temporary name in the same
  folder and renamed into place. Once there it is never changed.
- `current` is replaced atomically (written to a temporary file, fsynced, `os.replace`d), so a
  reader sees the old name or the new one, never a torn write; no symlink is involved.
- Versions are named v1, v2, ... in creation order; a name is never reused within a data dir.

Exceptions: VersionError (a user mistake or a damaged store; the message says what to do).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import secrets
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from learner.durable import fsync, write_atomically

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
META_FILE = "meta.json"
_NAME = re.compile(r"v(\d+)")


class VersionError(RuntimeError):
    """An executor version cannot be found, made, promoted or rolled back (the message says why)."""


@dataclass(frozen=True)
class VersionMeta:
    """What a version is. `parent` is the version that was current when this one was trained and
    gated (None: the base model); promote refuses when the pointer has moved since."""

    base_model: str  # the base model's directory or served name
    base_model_hash: str  # model_hash() of that directory, or "" when it is remote
    parent: str | None = None
    training: dict[str, Any] = field(default_factory=dict)  # the cycle's summary figures
    gate: dict[str, Any] | None = None  # GateDecision.as_dict()
    created_at: float = 0.0  # unix seconds; promote sets it

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VersionMeta:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)


@dataclass(frozen=True)
class Version:
    name: str
    directory: Path  # a PEFT adapter directory (meta.json sits beside the adapter files)
    meta: VersionMeta


@dataclass(frozen=True)
class PointerMove:
    """One line of history.jsonl."""

    at: float
    action: str  # "promote" or "rollback"
    from_version: str | None
    to_version: str


class ExecutorVersions:
    """The version store under `<data_dir>/executor`. Reading never takes the lock."""

    def __init__(self, data_dir: str | Path) -> None:
        self.root = Path(data_dir).expanduser() / "executor"
        self.versions_dir = self.root / "versions"

    # Reading ---------------------------------------------------------------------------------

    def current_name(self) -> str | None:
        try:
            name = (self.root / "current").read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        return name or None

    def current(self) -> Version | None:
        name = self.current_name()
        return None if name is None else self.get(name)

    def get(self, name: str) -> Version:
        directory = self.versions_dir / name
        if not _NAME.fullmatch(name) or not directory.is_dir():
            known = ", ".join(v.name for v in self.list_versions()) or "none yet"
            raise VersionError(f"no executor version {name!r} (versions: {known})")
        try:
            meta = json.loads((directory / META_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise VersionError(f"{directory / META_FILE} cannot be read ({exc})") from None
        return Version(name, directory, VersionMeta.from_json(meta))

    def list_versions(self) -> list[Version]:
        """Every version, oldest first."""
        if not self.versions_dir.is_dir():
            return []
        names = [p.name for p in self.versions_dir.iterdir() if _NAME.fullmatch(p.name)]
        return [self.get(name) for name in sorted(names, key=_number)]

    def history(self) -> list[PointerMove]:
        try:
            lines = (self.root / "history.jsonl").read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        return [PointerMove(**json.loads(line)) for line in lines if line.strip()]

    # Writing (call with `locked()` held) -----------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's lock: one promotion or rollback at a time, across processes."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def add(self, adapter_dir: str | Path, meta: VersionMeta) -> Version:
        """Copy a PEFT adapter directory in as the next version, with `meta` beside it."""
        source = Path(adapter_dir).expanduser()
        missing = [name for name in ADAPTER_FILES if not (source / name).is_file()]
        if missing:
            raise VersionError(
                f"{source} is not a saved PEFT adapter (missing {', '.join(missing)}): "
                "save it with model.save_pretrained(directory)"
            )
        self.versions_dir.mkdir(parents=True, exist_ok=True)
        existing = [_number(p.name) for p in self.versions_dir.iterdir() if _NAME.fullmatch(p.name)]
        name = f"v{max(existing, default=0) + 1}"
        staging = self.versions_dir / f".{name}-{secrets.token_hex(4)}"
        staging.mkdir()  # with the umask's mode, as the data dir's other folders
        try:
            for file in ADAPTER_FILES:
                shutil.copyfile(source / file, staging / file)
            _write_json(staging / META_FILE, asdict(meta))
            _fsync_folder(staging)
            staging.rename(self.versions_dir / name)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return self.get(name)

    def move_pointer(self, to_version: str, action: str) -> PointerMove:
        """Point `current` at `to_version` and append the move to the history."""
        self.get(to_version)  # exists, and readable
        move = PointerMove(time.time(), action, self.current_name(), to_version)
        write_atomically(self.root / "current", f"{to_version}\n")
        with open(self.root / "history.jsonl", "a", encoding="utf-8") as history:
            history.write(json.dumps(asdict(move)) + "\n")
        return move


def model_hash(directory: str | Path) -> str:
    """sha256 over a model directory's config and weights (name and content of each file), so
    meta.json can say which base model an adapter belongs to."""
    path = Path(directory).expanduser()
    files = sorted(p for p in path.iterdir() if p.name == "config.json" or p.suffix == ".safetensors")
    if not files:
        raise VersionError(f"{path} holds no config.json or .safetensors weights")
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode() + b"\0")
        with open(file, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def _number(name: str) -> int:
    return int(name[1:])


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _fsync_folder(folder: Path) -> None:
    """Flush a folder's files to disk, so that renaming it into place publishes whole files."""
    for file in folder.iterdir():
        fsync(file)
