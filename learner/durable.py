"""Files a crash cannot tear: each is written under a temporary name in its own folder, flushed
to disk, renamed into place, and the folder flushed too, so that after a crash (or a power
loss) a reader finds either the old file or the whole new one, and the rename itself is on
disk. Used for what a later run trusts: checkpoints, executor versions, the kept candidate.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def fsync(path: Path) -> None:
    """Flush a file's, or a folder's (its entries: renames into it), contents to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def publish(written: Path, final: Path) -> None:
    """Put the finished file `written` in place as `final` (same folder), durably."""
    fsync(written)
    os.replace(written, final)
    fsync(final.parent)


def write_atomically(path: Path, text: str) -> None:
    """Replace `path`'s contents with `text` durably: never a partly written file."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        publish(Path(temporary), path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
