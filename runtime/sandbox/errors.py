"""The sandbox exceptions.

```
SandboxError                  anything the sandbox layer cannot do
 +-- SandboxUnavailable       the asked-for backend cannot run here (message says what to install)
 +-- SandboxStateError        start/run/stop called out of order (run before start, after stop)
 +-- WorkspacePathError       a file path that leaves the workspace (.., absolute, symlink out)
 +-- SnapshotError            a snapshot that is missing or whose bytes do not match its id
```

A command that exits non-zero or runs past its timeout is not an exception: it is data in
`CommandResult` (`exit_code`, `timed_out`), because the executor shows it to the model.

`IsolationWarning` (a UserWarning, not an error) is how code that runs commands unattended says
that it runs them in the `local` backend, because someone chose it: loudly, never silently.
"""


class SandboxError(Exception):
    """Base of every error raised by runtime.sandbox."""


class SandboxUnavailable(SandboxError):
    """The backend cannot run on this machine; the message says why and what to do."""


class SandboxStateError(SandboxError):
    """A call that the sandbox's lifecycle does not allow now (e.g. run() after stop())."""


class WorkspacePathError(SandboxError):
    """A file path that would resolve outside the sandbox's workspace."""


class SnapshotError(SandboxError):
    """A snapshot that cannot be found or does not match its content address."""


class IsolationWarning(UserWarning):
    """Commands are about to run without isolation (the `local` backend), as was chosen."""
