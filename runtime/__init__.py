"""temper's runtime: the loop, models, tools and the sandboxes terminal work runs in.

Public surface (other packages import from here, not from submodules).
"""

from runtime.sandbox import (
    BackendName,
    BackendStatus,
    CommandResult,
    Limits,
    Sandbox,
    SandboxError,
    SandboxOptions,
    SandboxUnavailable,
    Snapshot,
    available_backends,
    open_sandbox,
)

__all__ = [
    "BackendName",
    "BackendStatus",
    "CommandResult",
    "Limits",
    "Sandbox",
    "SandboxError",
    "SandboxOptions",
    "SandboxUnavailable",
    "Snapshot",
    "available_backends",
    "open_sandbox",
]
