"""The file tools: `read_file`, `write_file` and `list_files`, confined to the sandbox workspace.

Paths are relative to the workspace, or absolute under the sandbox's `workdir` (what commands
see, e.g. /workspace). A path that is absolute elsewhere or climbs out with `..` is refused
here with a message the model can act on; reads and writes then go through the sandbox's own
file API, which also refuses symlinks that lead out, FIFOs and devices. The sandbox has no
listing call, so `list_files` walks the host directory itself, never following a symlink: a
link is shown as `name -> target` and not entered.

Invariants: nothing outside the workspace is read, written or listed; output is bounded
(read_file by lines, list_files by entries, both again by the toolbox).
"""

from __future__ import annotations

import asyncio
import os
import posixpath
import stat
from collections import deque
from pathlib import Path, PurePosixPath
from typing import Annotated

from pydantic import Field

from runtime.sandbox import Sandbox, WorkspacePathError
from runtime.tools.context import ToolContext
from runtime.tools.result import ToolError

MAX_LIST_ENTRIES = 300
NOT_EXPANDED = frozenset(
    {
        ".git",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)
_BINARY_SNIFF_BYTES = 8192


async def read_file(
    context: ToolContext,
    path: str,
    offset: Annotated[int, Field(ge=1)] = 1,
    limit: Annotated[int, Field(ge=1, le=5000)] = 400,
) -> str:
    """Read a workspace text file: `limit` lines from line `offset`."""
    sandbox = context.require_sandbox()
    relative = workspace_path(sandbox, path)
    try:
        data = await sandbox.read_file(relative)
    except FileNotFoundError:
        raise ToolError(f"there is no file {path} in the workspace") from None
    except WorkspacePathError as error:
        raise ToolError(f"cannot read {path}: {error} (list_files shows directories)") from None
    except (NotADirectoryError, PermissionError) as error:
        raise ToolError(f"cannot read {path}: {error.strerror}") from None
    if b"\0" in data[:_BINARY_SNIFF_BYTES]:
        raise ToolError(f"{path} is a binary file ({len(data)} bytes); inspect it with shell")
    lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
    if not lines:
        return f"({path} is empty)"
    if offset > len(lines):
        raise ToolError(f"{path} has {len(lines)} lines; offset {offset} is past the end")
    chosen = lines[offset - 1 : offset - 1 + limit]
    text = "".join(chosen).rstrip("\n")
    last = offset + len(chosen) - 1
    if offset == 1 and last == len(lines):
        return text
    more = f"; continue with offset={last + 1}" if last < len(lines) else ""
    return f"{text}\n[lines {offset}-{last} of {len(lines)}{more}]"


async def write_file(context: ToolContext, path: str, content: str) -> str:
    """Create or overwrite a workspace file."""
    sandbox = context.require_sandbox()
    relative = workspace_path(sandbox, path)
    try:
        await sandbox.write_file(relative, content)
    except WorkspacePathError as error:
        raise ToolError(f"cannot write {path}: {error}") from None
    except (IsADirectoryError, NotADirectoryError, PermissionError) as error:
        raise ToolError(f"cannot write {path}: {error.strerror}") from None
    return f"Wrote {len(content.encode())} bytes to {relative}."


async def list_files(context: ToolContext, path: str = ".") -> str:
    """List a workspace directory, recursively."""
    sandbox = context.require_sandbox()
    relative = workspace_path(sandbox, path, directory=True)
    lines = await asyncio.to_thread(_listing, sandbox.workspace, relative)
    return "\n".join(lines) if lines else f"({path} is empty)"


def workspace_path(sandbox: Sandbox, path: str, *, directory: bool = False) -> str:
    """`path` relative to the workspace, or a ToolError saying why it is not in it."""
    text = path.strip()
    pure = PurePosixPath(text)
    if pure.is_absolute():
        workdir = PurePosixPath(sandbox.workdir)
        if pure != workdir and workdir not in pure.parents:
            raise ToolError(
                f"{path} is outside the workspace; use a path relative to it "
                f"(the workspace is {sandbox.workdir})"
            )
        pure = pure.relative_to(workdir)
    normal = posixpath.normpath(str(pure)) if str(pure) else "."
    if normal == ".." or normal.startswith("../"):
        raise ToolError(f"{path} leads outside the workspace")
    if normal == "." and not directory:
        raise ToolError("give the path of a file in the workspace")
    return normal


def _listing(workspace: Path, relative: str) -> list[str]:
    """Entries under `relative`, breadth first: `dir/`, `file  size`, `link -> target`."""
    start = _enter(workspace, relative)
    prefix = "" if relative == "." else relative.rstrip("/") + "/"
    lines: list[str] = []
    queue: deque[tuple[Path, str]] = deque([(start, prefix)])
    while queue:
        directory, shown = queue.popleft()
        with os.scandir(directory) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if len(lines) >= MAX_LIST_ENTRIES:
                    lines.append(f"[stopped at {MAX_LIST_ENTRIES} entries; list a subdirectory]")
                    return lines
                name = shown + entry.name
                if entry.is_symlink():
                    lines.append(f"{name} -> {os.readlink(entry.path)}")
                elif entry.is_dir(follow_symlinks=False):
                    skipped = entry.name in NOT_EXPANDED
                    lines.append(f"{name}/" + (" (not expanded)" if skipped else ""))
                    if not skipped:
                        queue.append((Path(entry.path), name + "/"))
                else:
                    lines.append(f"{name}  {_size(entry.stat(follow_symlinks=False).st_size)}")
    return lines


def _enter(workspace: Path, relative: str) -> Path:
    """The host directory for `relative`, reached without following any symlink."""
    current = workspace
    for part in PurePosixPath(relative).parts:
        if part == ".":
            continue
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            raise ToolError(f"there is no directory {relative} in the workspace") from None
        if stat.S_ISLNK(mode):
            raise ToolError(f"{relative} passes through a symlink; it is not followed")
        if not stat.S_ISDIR(mode):
            raise ToolError(f"{relative} is not a directory (read_file reads files)")
    return current


def _size(size: int) -> str:
    if size < 1024:
        return f"{size}B"
    value = float(size)
    for unit in "KMG":
        value /= 1024
        if value < 1024:
            return f"{value:.1f}{unit}"
    return f"{value / 1024:.1f}T"
