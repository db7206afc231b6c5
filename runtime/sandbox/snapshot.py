"""Content-addressed workspace snapshots: a tarball named by the sha256 of its bytes.

A snapshot is `<store>/<sha256>.tar`. The tarball is deterministic for a given tree: entries in
sorted order, owners zeroed, whole-second mtimes kept (tools like make read them), so the same
workspace always gets the same id and storing it twice costs nothing. Symlinks are stored as
links, never followed. Restoring verifies the bytes against the id, then checks every member:
nothing absolute, no `..`, nothing behind a symlink of the archive, no device files, no setuid
bits; so a snapshot lands inside its target or not at all.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from runtime.sandbox.errors import SnapshotError

_CHUNK = 1 << 20
# Members are checked by _contained_members; tarfile's own filters (3.11.4+) would also refuse
# absolute symlinks, which a workspace may legitimately hold.
_NO_FILTER: dict[str, Any] = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}


@dataclass(frozen=True)
class Snapshot:
    """A stored workspace: `id` is the sha256 hex digest of the tarball at `path`."""

    id: str
    path: Path
    size_bytes: int

    @classmethod
    def load(cls, store: Path, snapshot_id: str) -> Snapshot:
        """The snapshot `snapshot_id` in `store` (bytes are verified when it is restored)."""
        path = Path(store) / f"{snapshot_id}.tar"
        if not path.is_file():
            raise SnapshotError(f"no snapshot {snapshot_id} in {store}")
        return cls(id=snapshot_id, path=path, size_bytes=path.stat().st_size)


def take_snapshot(workspace: Path, store: Path) -> Snapshot:
    """Write the tree under `workspace` into `store` and return its snapshot (blocking I/O)."""
    store = Path(store)
    store.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".snapshot-", suffix=".tar", dir=store)
    tmp = Path(tmp_name)
    try:
        with (
            os.fdopen(fd, "wb") as raw,
            tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            for relative in _walk_sorted(workspace):
                info = tar.gettarinfo(str(workspace / relative), arcname=relative)
                if info is None or info.isdev():
                    continue  # sockets and devices are not workspace state
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mtime = int(info.mtime)
                if info.isreg():
                    with open(workspace / relative, "rb") as member:
                        tar.addfile(info, member)
                else:
                    tar.addfile(info)
        digest = _sha256(tmp)
        final = store / f"{digest}.tar"
        if final.exists():
            tmp.unlink()
        else:
            tmp.rename(final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return Snapshot(id=digest, path=final, size_bytes=final.stat().st_size)


def restore_snapshot(snapshot: Snapshot, workspace: Path) -> None:
    """Extract `snapshot` into the (empty) directory `workspace` after checking its bytes."""
    if not snapshot.path.is_file():
        raise SnapshotError(f"snapshot file {snapshot.path} is missing")
    actual = _sha256(snapshot.path)
    if actual != snapshot.id:
        raise SnapshotError(f"snapshot {snapshot.path} is corrupt: its sha256 is {actual}, not {snapshot.id}")
    try:
        with tarfile.open(snapshot.path, mode="r") as tar:
            tar.extractall(workspace, members=_contained_members(tar), **_NO_FILTER)
    except (tarfile.TarError, OSError) as exc:
        raise SnapshotError(f"snapshot {snapshot.id} cannot be extracted: {exc}") from exc


def copy_tree(source: Path, workspace: Path) -> None:
    """Copy a host directory (e.g. a task's initial files) into `workspace`, links as links."""
    if not Path(source).is_dir():
        raise SnapshotError(f"workspace source {source} is not a directory")
    shutil.copytree(source, workspace, symlinks=True, dirs_exist_ok=True)


def _contained_members(tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """The members, checked to stay inside the target and stripped of setuid/setgid/sticky."""
    symlinks: set[PurePosixPath] = set()
    members = []
    for member in tar.getmembers():
        path = PurePosixPath(member.name)
        link = PurePosixPath(member.linkname) if member.islnk() else None
        if member.isdev() or any(p.is_absolute() or ".." in p.parts for p in (path, link) if p):
            raise SnapshotError(f"snapshot member {member.name} would land outside the workspace")
        crossed = {*path.parents, *((link, *link.parents) if link else ())}
        if crossed & symlinks:
            raise SnapshotError(f"snapshot member {member.name} lies behind a symlink")
        if member.issym():
            symlinks.add(path)
        member.mode &= 0o777
        members.append(member)
    return members


def _walk_sorted(root: Path) -> list[str]:
    """Relative paths of everything under root, parents before children, links not followed."""
    found: list[str] = []
    for directory, dirnames, filenames in os.walk(root):
        base = Path(directory).relative_to(root)
        for name in sorted(dirnames + filenames):
            found.append(str(base / name) if base != Path(".") else name)
    return sorted(found)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
