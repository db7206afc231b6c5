"""The bubblewrap backend: each command runs in fresh user, pid, network, ipc and uts namespaces.

What a command sees: `/usr` (and the /bin, /lib... links or binds), `/etc` read-only with its
secret files masked and a passwd naming the sandbox user, a private `/tmp` (a tmpfs, new for
each command), a minimal `/dev`, its own `/proc`, and the workspace read-write at `/workspace`.
Nothing else of the host is mounted: not /home, /root, /tmp, /var, /run, /work, nor the
directory holding the workspace, so host files cannot be read whatever their permissions.
Only loopback exists unless the network is enabled (`--share-net`). It runs as uid 1000 with no
capabilities, in a new session (no terminal injection), and with bwrap 0.8+ cannot make user
namespaces of its own and has a /tmp capped at the memory limit.

Invariants: bwrap runs with --die-with-parent and a pid namespace, so killing the bwrap process
(the process group `process.run_process_tree` kills) kills every process of the command, even
ones that called setsid; nothing survives a command. rlimits come from `prlimit`; when temper is
root, bwrap runs as nobody on the host (see process.py) and the workspace is owned by nobody.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
from pathlib import Path

from runtime.sandbox.base import BackendStatus, CommandResult, Sandbox, SandboxOptions
from runtime.sandbox.errors import SandboxError, SandboxUnavailable
from runtime.sandbox.process import rlimit_prefix, run_process_tree, sandbox_identity

SANDBOX_UID = 1000
_TOP_LEVEL = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# fmt: off
_ETC_SECRETS = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
    "/etc/sudoers", "/etc/sudoers.d", "/etc/ssh", "/etc/ssl/private",
)
# fmt: on
_PASSWD = f"""root:x:0:0:root:/root:/bin/sh
sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:/workspace:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
"""
_GROUP = f"root:x:0:\nsandbox:x:{SANDBOX_UID}:\nnogroup:x:65534:\n"
_INSTALL_HINT = "bwrap not found: install bubblewrap (apt-get install bubblewrap)"


class BwrapSandbox(Sandbox):
    name = "bwrap"
    workdir = "/workspace"

    @classmethod
    async def probe(cls, options: SandboxOptions) -> BackendStatus:
        sandbox = cls(options)
        try:
            await sandbox.start()
        except SandboxError as exc:
            return BackendStatus(cls.name, False, str(exc))
        await sandbox.stop()
        who = "as nobody (temper runs as root)" if sandbox_identity() else "as the current user"
        return BackendStatus(cls.name, True, f"namespaces and rlimits, {who}")

    def _owner(self) -> tuple[int, int] | None:
        return sandbox_identity()

    async def _boot(self) -> None:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise SandboxUnavailable(_INSTALL_HINT)
        self._bwrap = bwrap
        self._modern = await _version(bwrap) >= (0, 8)
        await asyncio.to_thread(_write_identity_files, self.workspace.parent / "etc")
        # A trial run, so that a bwrap that cannot make namespaces here (no user namespaces,
        # an AppArmor rule) fails at start with its reason, not later as a command's output.
        trial = await self._run("true", timeout_s=10)
        if not trial.ok:
            reason = trial.output.strip().splitlines()[:1] or [f"exit code {trial.exit_code}"]
            raise SandboxUnavailable(f"bwrap cannot make a sandbox here: {reason[0]}")

    async def _run(self, command: str, timeout_s: float) -> CommandResult:
        return await run_process_tree(
            rlimit_prefix(self.options.limits, sandbox_identity()) + self._bwrap_argv(command),
            command=command,
            cwd=str(self.workspace.parent),
            env=self._environment("/tmp"),
            timeout_s=timeout_s,
            max_output_bytes=self.options.max_output_bytes,
        )

    async def _shutdown(self) -> None:
        return None  # no process outlives a command; the base class deletes the directory

    # fmt: off
    def _bwrap_argv(self, command: str) -> list[str]:
        etc = self.workspace.parent / "etc"
        argv = [
            self._bwrap,
            "--unshare-all", "--unshare-user",
            *(["--disable-userns"] if self._modern else []),
            *(["--share-net"] if self.options.network else []),
            "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "sandbox",
            "--ro-bind", "/usr", "/usr",
        ]
        for path in _TOP_LEVEL:
            if os.path.islink(path):
                argv += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                argv += ["--ro-bind", path, path]
        argv += ["--ro-bind", "/etc", "/etc"]
        for path in _ETC_SECRETS:
            if os.path.isdir(path) and not os.path.islink(path):
                argv += ["--tmpfs", path]
            elif os.path.lexists(path):
                argv += ["--ro-bind", "/dev/null", path]
        argv += [
            "--ro-bind", str(etc / "passwd"), "/etc/passwd",
            "--ro-bind", str(etc / "group"), "/etc/group",
            "--dev", "/dev", "--proc", "/proc",
            *(["--size", str(self.options.limits.memory_bytes)] if self._modern else []),
            "--tmpfs", "/tmp",
            "--bind", str(self.workspace), self.workdir, "--chdir", self.workdir,
            "--", "/bin/sh", "-c", command,
        ]
        return argv
    # fmt: on


def _write_identity_files(etc: Path) -> None:
    """The passwd and group files bound over /etc's, naming the sandbox user."""
    etc.mkdir(mode=0o755)
    (etc / "passwd").write_text(_PASSWD)
    (etc / "group").write_text(_GROUP)


_versions: dict[str, tuple[int, ...]] = {}


async def _version(bwrap: str) -> tuple[int, ...]:
    """bwrap's version; 0.8 added --disable-userns and --size (Ubuntu 22.04 ships 0.6)."""
    if bwrap not in _versions:
        process = await asyncio.create_subprocess_exec(
            bwrap, "--version", stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        stdout, _ = await process.communicate()
        _versions[bwrap] = tuple(int(part) for part in re.findall(r"\d+", stdout.decode())[:3])
    return _versions[bwrap]
