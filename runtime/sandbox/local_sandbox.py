"""The local backend: a plain subprocess in the workspace directory. The weakest; opt-in only.

What it does: a clean environment, rlimits (address space, processes, file size, CPU seconds,
open files) through `prlimit`, a new session, and SIGKILL to the whole process group when the
command ends or times out. When temper runs as root, commands run as nobody.

What it cannot do, and the tests mark as expected failures: keep the command off the network,
hide host files (it reads whatever the host user can), keep it from writing where the host user
can, or kill a process that left the group with setsid. `warning` says so; `open_sandbox("auto")`
never picks this backend.
"""

from __future__ import annotations

import shutil

from runtime.sandbox.base import BackendStatus, CommandResult, Sandbox, SandboxOptions
from runtime.sandbox.process import rlimit_prefix, run_process_tree, sandbox_identity


class LocalSandbox(Sandbox):
    name = "local"
    warning = (
        "The local sandbox gives NO isolation: commands run on this host with your files and "
        "network, limited only by rlimits and a process-group kill. Use docker or bwrap "
        "(apt-get install bubblewrap) for anything you do not fully trust."
    )

    @classmethod
    async def probe(cls, options: SandboxOptions) -> BackendStatus:
        if shutil.which("prlimit") is None:
            return BackendStatus(cls.name, False, "prlimit not found: install util-linux")
        return BackendStatus(cls.name, True, "no isolation (rlimits only); used only when chosen")

    def _owner(self) -> tuple[int, int] | None:
        return sandbox_identity()

    async def _boot(self) -> None:
        self.workdir = str(self.workspace)

    async def _run(self, command: str, timeout_s: float) -> CommandResult:
        return await run_process_tree(
            [*rlimit_prefix(self.options.limits, sandbox_identity()), "/bin/sh", "-c", command],
            command=command,
            cwd=self.workdir,
            env=self._environment(str(self.workspace.parent / "home")),
            timeout_s=timeout_s,
            max_output_bytes=self.options.max_output_bytes,
        )

    async def _shutdown(self) -> None:
        return None  # the process group of each command was killed when it returned
