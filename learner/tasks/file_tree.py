"""Reading a directory into a task's files: relative path -> text (bytes when not UTF-8), and
which are executable. Used for a task folder's parts (tbench.py) and for an episode's workspace
(episodes.py). Symlinks are refused, since they could point anywhere; the whole tree is bounded
by MAX_TASK_BYTES."""

from __future__ import annotations

import os
from pathlib import Path

from learner.tasks.task import FileContent, TaskFormatError

MAX_TASK_BYTES = 64 << 20


def read_tree(root: Path, prefix: str = "") -> tuple[dict[str, FileContent], frozenset[str]]:
    """The regular files under `root` (relative path -> text, or bytes when not UTF-8), and
    which of them are executable. Symlinks are refused: they could point anywhere."""
    files: dict[str, FileContent] = {}
    executable: set[str] = set()
    total = 0
    if not root.is_dir():
        return files, frozenset()
    for directory, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            full = Path(directory) / name
            relative = prefix + full.relative_to(root).as_posix()
            if full.is_symlink():
                raise TaskFormatError(
                    f"{root.name}/{full.relative_to(root)} is a symlink; copy the file instead"
                )
            if not full.is_file():
                continue
            total += full.stat().st_size
            if total > MAX_TASK_BYTES:
                raise TaskFormatError(f"{root.name}/ is larger than {MAX_TASK_BYTES >> 20} MiB")
            data = full.read_bytes()
            try:
                files[relative] = data.decode("utf-8")
            except UnicodeDecodeError:
                files[relative] = data
            if os.access(full, os.X_OK):
                executable.add(relative)
    return files, frozenset(executable)
