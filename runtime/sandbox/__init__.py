"""Sandboxes: where terminal work runs. One interface (`Sandbox`), three backends, strongest first.

- `docker`: a container per sandbox; no network, read-only root, memory/pids/CPU limits, no
  capabilities, non-root user; of the host, only the workspace is mounted.
- `bwrap`: bubblewrap namespaces (user, pid, net, ipc, uts); of the host, only /usr, an
  allowlist of /etc entries and the workspace are visible; private /tmp, rlimits.
- `local`: a subprocess with rlimits and a process-group kill; no isolation, chosen only by name,
  and `LocalSandbox.warning` says so.

Every command has a timeout, bounded output (head and tail kept), and leaves nothing running
when it returns. No backend passes the host's environment to a command. A non-zero exit or a
timeout is data in `CommandResult`, not an exception. Workspaces snapshot to content-addressed
tarballs that start fresh sandboxes.

Exceptions (see errors.py): SandboxError > SandboxUnavailable, SandboxStateError,
WorkspacePathError, SnapshotError; and IsolationWarning, for commands run in `local` by choice.
"""

from runtime.sandbox.base import (
    BackendStatus,
    CommandResult,
    Limits,
    Sandbox,
    SandboxOptions,
    WorkspaceState,
)
from runtime.sandbox.bwrap_sandbox import BwrapSandbox
from runtime.sandbox.docker_sandbox import DockerSandbox
from runtime.sandbox.errors import (
    IsolationWarning,
    SandboxError,
    SandboxStateError,
    SandboxUnavailable,
    SnapshotError,
    WorkspacePathError,
)
from runtime.sandbox.local_sandbox import LocalSandbox
from runtime.sandbox.process import watch_children_with_pidfds
from runtime.sandbox.selection import (
    BACKENDS,
    BackendName,
    available_backends,
    choose_backend,
    open_sandbox,
)
from runtime.sandbox.snapshot import Snapshot, take_snapshot

__all__ = [
    "BACKENDS",
    "BackendName",
    "BackendStatus",
    "BwrapSandbox",
    "CommandResult",
    "DockerSandbox",
    "IsolationWarning",
    "Limits",
    "LocalSandbox",
    "Sandbox",
    "SandboxError",
    "SandboxOptions",
    "SandboxStateError",
    "SandboxUnavailable",
    "Snapshot",
    "SnapshotError",
    "WorkspacePathError",
    "WorkspaceState",
    "available_backends",
    "choose_backend",
    "open_sandbox",
    "take_snapshot",
    "watch_children_with_pidfds",
]
