"""Snapshots: content-addressed, deterministic, verified, and safe to restore."""

from __future__ import annotations

import io
import os
import tarfile
from hashlib import sha256
from pathlib import Path

import pytest

from runtime.sandbox import Snapshot, SnapshotError
from runtime.sandbox.snapshot import restore_snapshot, take_snapshot


def make_tree(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    os.symlink("/etc/passwd", root / "outside-link")
    for path in (root / "src" / "main.py", root / "run.sh", root / "src", root):
        os.utime(path, (1_700_000_000, 1_700_000_000))
    return root


def test_the_same_tree_gets_the_same_id(tmp_path: Path) -> None:
    first = take_snapshot(make_tree(tmp_path / "a"), tmp_path / "store")
    second = take_snapshot(make_tree(tmp_path / "b"), tmp_path / "store")
    assert first == second
    assert first.id == sha256(first.path.read_bytes()).hexdigest()
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == [f"{first.id}.tar"]


def test_restore_keeps_modes_and_links_without_following_them(tmp_path: Path) -> None:
    snapshot = take_snapshot(make_tree(tmp_path / "a"), tmp_path / "store")
    target = tmp_path / "restored"
    target.mkdir()
    restore_snapshot(Snapshot.load(tmp_path / "store", snapshot.id), target)
    assert (target / "src" / "main.py").read_text() == "print('hi')\n"
    assert os.access(target / "run.sh", os.X_OK)
    assert os.readlink(target / "outside-link") == "/etc/passwd"


def test_a_corrupt_snapshot_is_refused(tmp_path: Path) -> None:
    snapshot = take_snapshot(make_tree(tmp_path / "a"), tmp_path / "store")
    with open(snapshot.path, "r+b") as stream:
        stream.seek(600)
        stream.write(b"tampered")
    with pytest.raises(SnapshotError, match="corrupt"):
        restore_snapshot(snapshot, tmp_path)


def test_a_missing_snapshot_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="no snapshot"):
        Snapshot.load(tmp_path, "0" * 64)


def store_crafted(store: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Snapshot:
    """A tarball made by hand (as an attacker would), stored under its true content address."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    digest = sha256(buffer.getvalue()).hexdigest()
    store.mkdir(exist_ok=True)
    (store / f"{digest}.tar").write_bytes(buffer.getvalue())
    return Snapshot.load(store, digest)


def test_a_tarball_that_climbs_out_is_not_extracted(tmp_path: Path) -> None:
    snapshot = store_crafted(tmp_path / "store", [(tarfile.TarInfo("../escaped.txt"), b"bad")])
    (tmp_path / "target").mkdir()
    with pytest.raises(SnapshotError, match="outside"):
        restore_snapshot(snapshot, tmp_path / "target")
    assert not (tmp_path / "escaped.txt").exists()


def test_a_tarball_that_writes_through_its_own_symlink_is_not_extracted(tmp_path: Path) -> None:
    link = tarfile.TarInfo("d")
    link.type, link.linkname = tarfile.SYMTYPE, str(tmp_path)
    snapshot = store_crafted(tmp_path / "store", [(link, b""), (tarfile.TarInfo("d/escaped.txt"), b"bad")])
    (tmp_path / "target").mkdir()
    with pytest.raises(SnapshotError, match="behind a symlink"):
        restore_snapshot(snapshot, tmp_path / "target")
    assert not (tmp_path / "escaped.txt").exists()


def test_a_hard_link_through_its_own_symlink_is_not_extracted(tmp_path: Path) -> None:
    symlink, hardlink = tarfile.TarInfo("etc"), tarfile.TarInfo("stolen")
    symlink.type, symlink.linkname = tarfile.SYMTYPE, "/etc"
    hardlink.type, hardlink.linkname = tarfile.LNKTYPE, "etc/hostname"
    snapshot = store_crafted(tmp_path / "store", [(symlink, b""), (hardlink, b"")])
    (tmp_path / "target").mkdir()
    with pytest.raises(SnapshotError, match="behind a symlink"):
        restore_snapshot(snapshot, tmp_path / "target")
