"""The bubblewrap backend: each command runs in fresh user, pid, network, ipc and uts namespaces.

What a command sees is an allowlist, never the host's tree:
- `/usr` read-only, and the merged-usr links (/bin, /lib, ...) as the host has them;
- an `/etc` of its own: the few host entries that programs need to start and behave (the
  dynamic linker's cache, alternatives, time zone, name-service switch, certificates: see
  `ETC_ALLOWED`) bound read-only one by one, and a generated passwd, group and hosts. No other
  /etc entry is there: not /etc/temper (where `temper daemon install` puts config.toml and
  secrets.toml), not shadow or sudoers, not pip.conf, npmrc or gitconfig (which may hold tokens);
- a private `/tmp` and `/dev/shm` (tmpfs, new for each command, sized), a minimal `/dev` and the
  `/proc` of its own pid namespace (no host process is visible);
- the workspace read-write at `/workspace`; the root and /etc are read-only.
Nothing else of the host is mounted: not /home, /root, /var, /run, /srv, /opt, the data dir or
the directory holding the workspace. Host files cannot be read whatever their permissions, which
matters because bwrap maps the daemon's own user into the sandbox: a mode-600 secrets file the
daemon owns would be readable if its directory were bound.

The environment is built from nothing: bwrap itself starts with an empty one (its pid 1 inside
the sandbox keeps the environment it was started with, readable in /proc/1/environ) and
`--clearenv` then sets only PATH, HOME, TMPDIR, LANG, TERM and the caller's `env`.
Only loopback exists unless the network is enabled (`--share-net`). It runs as uid 1000 with no
capabilities, in a session without a controlling terminal (no terminal injection: see below),
and with bwrap 0.8+ cannot make user namespaces of its own and has tmpfs sizes capped.

Invariants: bwrap runs with --die-with-parent and a pid namespace, so killing the bwrap process
(the process group `process.run_process_tree` kills) kills every process of the command, even
ones that called setsid; nothing survives a command. The session is the one `run_process_tree`
starts (no terminal), not bwrap's `--new-session`: that moves bwrap's inner process out of the
killed group before it has asked to die with its parent, so a kill in the first milliseconds of
a command (a replay cancelling its attempts) left the command running on its own, unsupervised
(tests/runtime/test_sandbox_cleanup.py). rlimits come from `prlimit`; when temper is root, bwrap
runs as nobody on the host (see process.py) and the workspace is owned by nobody.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from runtime.sandbox.base import BackendStatus, CommandResult, Sandbox, SandboxOptions
from runtime.sandbox.errors import SandboxError, SandboxUnavailable
from runtime.sandbox.process import rlimit_prefix, run_process_tree, sandbox_identity

SANDBOX_UID = 1000
SHM_BYTES = 64 << 20
_TOP_LEVEL = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The host /etc entries a command may see, each bound read-only (a symlink is recreated as a
# symlink, so it resolves inside the sandbox, never to the host file it names). Chosen by what
# the shell, coreutils, python3, git, awk, sed, grep, find, tar, file and TLS clients read.
# fmt: off
ETC_ALLOWED = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d",          # the dynamic linker
    "alternatives",                                       # /usr/bin/awk -> /etc/alternatives/awk
    "nsswitch.conf", "host.conf", "gai.conf", "protocols", "services", "networks",
    "localtime", "timezone", "locale.alias",
    "profile", "bash.bashrc", "inputrc", "shells", "terminfo", "vim",
    "mime.types", "magic", "magic.mime",
    "ssl/certs", "ssl/openssl.cnf", "ca-certificates.conf",
    "python3*",                                           # Debian's sitecustomize
    "os-release", "debian_version", "lsb-release", "mtab",
)
# fmt: on
_PASSWD = f"""root:x:0:0:root:/root:/bin/sh
sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:/workspace:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
"""
_GROUP = f"root:x:0:\nsandbox:x:{SANDBOX_UID}:\nnogroup:x:65534:\n"
_HOSTS = "127.0.0.1\tlocalhost\n127.0.1.1\tsandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n"
_GENERATED = {"passwd": _PASSWD, "group": _GROUP, "hosts": _HOSTS}
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
        etc = self.workspace.parent / "etc"
        await asyncio.to_thread(_write_generated_etc, etc)
        self._etc = _etc_mounts(etc, network=self.options.network)
        # A trial run, so that a bwrap that cannot make namespaces here (no user namespaces,
        # an AppArmor rule) fails at start with its reason, not later as a command's output.
        # Once one has passed, this bwrap works here: later sandboxes (a replay starts hundreds)
        # skip it.
        if bwrap in _proven:
            return
        trial = await self._run("true", timeout_s=10)
        if not trial.ok:
            reason = trial.output.strip().splitlines()[:1] or [f"exit code {trial.exit_code}"]
            raise SandboxUnavailable(f"bwrap cannot make a sandbox here: {reason[0]}")
        _proven.add(bwrap)

    async def _run(self, command: str, timeout_s: float) -> CommandResult:
        return await run_process_tree(
            rlimit_prefix(self.options.limits, sandbox_identity()) + self._bwrap_argv(command),
            command=command,
            cwd=str(self.workspace.parent),
            env={},  # bwrap's own environment stays readable in the sandbox's /proc/1/environ
            timeout_s=timeout_s,
            max_output_bytes=self.options.max_output_bytes,
        )

    async def _shutdown(self) -> None:
        return None  # no process outlives a command; the base class deletes the directory

    # fmt: off
    def _bwrap_argv(self, command: str) -> list[str]:
        limits = self.options.limits
        argv = [
            self._bwrap,
            "--unshare-all", "--unshare-user",
            *(["--disable-userns"] if self._modern else []),
            *(["--share-net"] if self.options.network else []),
            "--die-with-parent", "--cap-drop", "ALL",
            "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "sandbox",
            "--clearenv",
        ]
        for name, value in self._environment("/tmp").items():
            argv += ["--setenv", name, value]
        argv += ["--ro-bind", "/usr", "/usr"]
        for path in _TOP_LEVEL:
            if os.path.islink(path):
                argv += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                argv += ["--ro-bind", path, path]
        argv += [
            *self._etc,
            "--dev", "/dev", "--proc", "/proc",
            *(["--size", str(limits.memory_bytes)] if self._modern else []), "--tmpfs", "/tmp",
            "--bind", str(self.workspace), self.workdir, "--chdir", self.workdir,
            "--remount-ro", "/", "--remount-ro", "/dev",
            *(["--size", str(min(SHM_BYTES, limits.memory_bytes))] if self._modern else []),
            "--tmpfs", "/dev/shm",
            "--", "/bin/sh", "-c", command,
        ]
        return argv
    # fmt: on


def _etc_mounts(generated: Path, *, network: bool, host_etc: Path = Path("/etc")) -> list[str]:
    """bwrap arguments that build the sandbox's /etc: the generated files and `ETC_ALLOWED`."""
    argv = ["--dir", "/etc"]  # made 0755; parents bwrap makes on its own would be 0700
    for name in sorted(_GENERATED):
        argv += ["--ro-bind", str(generated / name), f"/etc/{name}"]
    return argv + _host_etc_mounts(host_etc, network)


# The host part of /etc, per (host /etc, network), with the listings it was read from: globbing
# and stat-ing the allowlist cost ~3 ms, paid by every sandbox a replay opens (hundreds a step).
_RACY_NS = 1_000_000_000
_host_etc_cache: dict[tuple[Path, bool], tuple[tuple[int, ...], list[str]]] = {}


def _host_etc_mounts(host_etc: Path, network: bool) -> list[str]:
    """The `ETC_ALLOWED` entries as bwrap arguments, read again whenever a directory they are
    listed from (/etc, /etc/ssl) changed: an entry added, removed or replaced changes its mtime.
    A listing changed in the last second is not kept: mtimes tick coarsely, so a second change
    in the same tick would look like none (git's "racily clean" rule)."""
    listings = _listing_stamps(host_etc)
    cached = _host_etc_cache.get((host_etc, network))
    if cached is not None and cached[0] == listings:
        return list(cached[1])
    argv: list[str] = []
    for pattern in ETC_ALLOWED:
        for source in sorted(host_etc.glob(pattern)):
            target = f"/etc/{source.relative_to(host_etc)}"
            if source.parent != host_etc:
                argv += ["--dir", os.path.dirname(target)]
            if source.is_symlink():
                argv += ["--symlink", os.readlink(source), target]
            elif source.is_file() or source.is_dir():
                argv += ["--ro-bind", str(source), target]
    resolv = host_etc / "resolv.conf"
    if network and resolv.exists():  # followed: systemd-resolved links it into /run
        argv += ["--ro-bind", str(resolv.resolve()), "/etc/resolv.conf"]
    if time.time_ns() - max(listings) > _RACY_NS:  # an older listing cannot change unseen
        _host_etc_cache[(host_etc, network)] = (listings, argv)
    return list(argv)


def _listing_stamps(host_etc: Path) -> tuple[int, ...]:
    stamps = []
    for directory in (host_etc, *sorted({host_etc / p.split("/")[0] for p in ETC_ALLOWED if "/" in p})):
        try:
            stamps.append(directory.stat().st_mtime_ns)
        except OSError:
            stamps.append(-1)
    return tuple(stamps)


def _write_generated_etc(etc: Path) -> None:
    """The passwd, group and hosts the sandbox sees, naming the sandbox user and host."""
    etc.mkdir(mode=0o755)
    for name, text in _GENERATED.items():
        (etc / name).write_text(text)


_versions: dict[str, tuple[int, ...]] = {}
_proven: set[str] = set()  # bwrap executables whose trial sandbox started in this process


async def _version(bwrap: str) -> tuple[int, ...]:
    """bwrap's version; 0.8 added --disable-userns and --size (Ubuntu 22.04 ships 0.6)."""
    if bwrap not in _versions:
        process = await asyncio.create_subprocess_exec(
            bwrap, "--version", stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        stdout, _ = await process.communicate()
        _versions[bwrap] = tuple(int(part) for part in re.findall(r"\d+", stdout.decode())[:3])
    return _versions[bwrap]
