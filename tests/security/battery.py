"""The sandbox red-team battery: canary secrets planted where a temper daemon keeps its own, then
every escape and exfiltration attempt in attempts.py run from inside a sandbox of one backend.

    result = await run_battery("bwrap", workspace_root, canaries)    # in this process
    result = run_battery_as_daemon_user("bwrap")                      # plants, drops to a user
    result.attempts, result.contained, result.canaries_read, result.escapes

An attempt is contained when its own test passes (nothing reached the host's listeners, nothing
was written outside, no process outlived its command, ...) and no canary appears in what it
saw. After the attempts, the workspace itself is searched for canaries ("left-in-workspace").

Run it as the daemon would: as a non-root user who owns the canary files (mode 600). bwrap maps
that user into the sandbox, so a file the sandbox can see is a file it can read; as root, bwrap
runs as nobody and those files are unreadable anyway, so a pass would prove nothing.
`run_battery_as_daemon_user` does this from any process: as root it plants the canaries for,
and runs the battery as, an unprivileged user (canaries.daemon_user), in a child process
(`python -m tests.security.battery BACKEND ROOT`, canaries on stdin) whose environment and
command line carry canaries too, as a daemon's would.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import site
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, cast

from runtime.sandbox import BackendName, Limits, Sandbox, SandboxError, SandboxOptions, open_sandbox
from tests.security.attempts import ATTEMPTS, Attempt, Outcome, Target
from tests.security.canaries import Canaries, daemon_user, plant_canaries, remove_canaries

REPO = Path(__file__).resolve().parents[2]
BATTERY_OPTIONS = SandboxOptions(
    limits=Limits(memory_bytes=256 << 20, pids=64, cpu_seconds=30, file_size_bytes=64 << 20),
    max_output_bytes=1 << 20,  # whole outputs: a canary must not hide in an elided middle
)
KINDS = tuple(dict.fromkeys(attempt.kind for attempt in ATTEMPTS))
_EXCERPT_CHARS = 400
_SETTLE_S = 0.2  # for a connection the kernel accepted to reach the host's listener


class BatteryError(Exception):
    """The battery itself could not run (not: an attempt escaped)."""


@dataclass(frozen=True)
class AttemptResult:
    name: str
    kind: str
    contained: bool
    canaries: tuple[str, ...]  # the canaries it read, by where they were planted
    detail: str  # how it got out, when it did
    seconds: float
    excerpt: str = ""  # the start of what it saw, to tell why


@dataclass(frozen=True)
class BatteryResult:
    backend: str
    results: tuple[AttemptResult, ...]
    seconds: float

    @property
    def attempts(self) -> int:
        return len(self.results)

    @property
    def contained(self) -> int:
        return sum(result.contained for result in self.results)

    @property
    def canaries_read(self) -> tuple[str, ...]:
        return tuple(sorted({where for result in self.results for where in result.canaries}))

    @property
    def escapes(self) -> list[AttemptResult]:
        return [result for result in self.results if not result.contained]

    def lines(self) -> list[str]:
        """The bench's `name: value` lines."""
        return [
            f"{self.backend}_attempts: {self.attempts}",
            f"{self.backend}_contained: {self.contained}",
            f"{self.backend}_canaries_read: {len(self.canaries_read)}",
        ]

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> BatteryResult:
        fields = json.loads(text)
        results = tuple(
            AttemptResult(**{**result, "canaries": tuple(result["canaries"])}) for result in fields["results"]
        )
        return cls(fields["backend"], results, fields["seconds"])


async def run_battery(
    backend: str,
    workspace_root: Path,
    canaries: Canaries,
    *,
    only: Iterable[str] | None = None,
    options: SandboxOptions | None = None,
) -> BatteryResult:
    """Every attempt (or `only` those of these names or kinds) in one sandbox of `backend`, as
    this process's user; the sandboxes' directories are made under `workspace_root`."""
    started = time.monotonic()
    options = replace(options or BATTERY_OPTIONS, workdir_root=Path(workspace_root))
    wanted = None if only is None else set(only)
    chosen = [a for a in ATTEMPTS if wanted is None or a.kind in wanted or a.name in wanted]
    async with battery_target(Path(workspace_root), canaries, options.limits.memory_bytes) as target:
        async with open_sandbox(cast(BackendName, backend), options=options) as sandbox:
            results = [await _try(attempt, sandbox, target) for attempt in chosen]
            results.append(await _left_in_workspace(sandbox, canaries))
    return BatteryResult(backend, tuple(results), time.monotonic() - started)


@asynccontextmanager
async def battery_target(
    workspace_root: Path, canaries: Canaries, memory_bytes: int
) -> AsyncIterator[Target]:
    """What the attempts aim at: this process, listeners on the host, a writable host dir."""
    host_dir = Path(tempfile.mkdtemp(prefix="temper-redteam-host-"))
    host_dir.chmod(0o777)  # writable by anyone: only the sandbox can keep a command out of it
    received: list[str] = []
    try:
        async with host_listeners(received) as (tcp_port, udp_port, abstract):
            yield Target(
                canaries,
                host_pid=os.getpid(),
                host_dir=host_dir,
                snapshot_dir=workspace_root / "snapshots",
                tcp_port=tcp_port,
                udp_port=udp_port,
                abstract_socket=abstract,
                engine_socket=_engine_socket(),
                marker=f"{secrets.randbelow(10**6):06d}",
                memory_bytes=memory_bytes,
                received=received,
            )
    finally:
        shutil.rmtree(host_dir, ignore_errors=True)


def run_battery_as_daemon_user(
    backend: str, *, only: Iterable[str] | None = None, timeout_s: float = 300
) -> BatteryResult:
    """Plant canaries and run the battery in a child process as the daemon's (non-root) user:
    this process's user, or an unprivileged one when this process is root."""
    root = Path(tempfile.mkdtemp(prefix="temper-redteam-"))
    root.chmod(0o711)
    owner = daemon_user() if os.geteuid() == 0 else (os.getuid(), os.getgid())
    canaries = plant_canaries(root, owner)
    try:
        sandboxes = root / "sandboxes"
        sandboxes.mkdir(mode=0o700)
        os.chown(sandboxes, *owner)
        drop = _drop_to(owner)
        source = _readable_source(root) if drop else REPO
        env = _daemon_environment(canaries, source)
        argv = [_interpreter(drop, env, source), "-m", "tests.security.battery", backend, str(sandboxes),
                "--canary", canaries.argv, *(["--only", ",".join(only)] if only else [])]  # fmt: skip
        child = subprocess.run(
            argv,
            input=canaries.to_json(),
            capture_output=True,
            text=True,
            cwd=source,
            env=env,
            timeout=timeout_s,
            **drop,
        )
        if child.returncode != 0:
            raise BatteryError(f"the battery ({backend}) failed: {child.stderr.strip()[-3000:]}")
        return BatteryResult.from_json(child.stdout.strip().splitlines()[-1])
    finally:
        remove_canaries(canaries)
        shutil.rmtree(root, ignore_errors=True)


async def _try(attempt: Attempt, sandbox: Sandbox, target: Target) -> AttemptResult:
    started = time.monotonic()
    target.received.clear()
    try:
        outcome = await attempt.probe(sandbox, target)
        if attempt.kind == "network":
            await asyncio.sleep(_SETTLE_S)
            if outcome.contained and target.received:
                outcome = Outcome(False, outcome.output, f"a host listener received {target.received}")
    except SandboxError as error:
        outcome = Outcome(False, "", f"the sandbox failed: {error}")
    read = target.canaries.found_in(outcome.output)
    detail = outcome.detail or (f"read {', '.join(sorted(read))}" if read else "")
    return AttemptResult(
        attempt.name,
        attempt.kind,
        outcome.contained and not read,
        tuple(sorted(read)),
        detail,
        time.monotonic() - started,
        outcome.output[:_EXCERPT_CHARS],
    )


async def _left_in_workspace(sandbox: Sandbox, canaries: Canaries) -> AttemptResult:
    """Whether any attempt left a canary in a workspace file (symlinks are not followed)."""
    started = time.monotonic()
    found: set[str] = set()
    for directory, _, files in os.walk(sandbox.workspace):
        for name in files:
            try:
                fd = os.open(os.path.join(directory, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue  # a symlink, a fifo without a writer, or a file the sandbox user keeps
            with os.fdopen(fd, "rb") as stream:
                found |= canaries.found_in(stream.read())
    detail = f"canaries in workspace files: {sorted(found)}" if found else ""
    return AttemptResult(
        "left-in-workspace", "workspace", not found, tuple(sorted(found)), detail, time.monotonic() - started
    )


@asynccontextmanager
async def host_listeners(received: list[str]) -> AsyncIterator[tuple[int, int, str]]:
    """A TCP and a UDP listener on 127.0.0.1 and an abstract unix socket, noting in `received`
    every connection or datagram: (tcp port, udp port, abstract socket name)."""
    loop = asyncio.get_running_loop()

    class Connections(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            received.append("a connection")
            transport.close()

    class Datagrams(asyncio.DatagramProtocol):
        def datagram_received(self, data: bytes, addr: tuple[str | bytes, int]) -> None:
            received.append(f"a datagram {data[:40]!r}")

    abstract = f"temper-redteam-{secrets.token_hex(6)}"
    tcp = await loop.create_server(Connections, "127.0.0.1", 0)
    unix = await loop.create_unix_server(Connections, "\0" + abstract)
    udp, _ = await loop.create_datagram_endpoint(Datagrams, local_addr=("127.0.0.1", 0))
    try:
        yield tcp.sockets[0].getsockname()[1], udp.get_extra_info("sockname")[1], abstract
    finally:
        udp.close()
        for server in (tcp, unix):
            server.close()
            await server.wait_closed()


def _engine_socket() -> str:
    host = os.environ.get("DOCKER_HOST", "")
    return host.removeprefix("unix://") if host.startswith("unix://") else ""


def _readable_source(root: Path) -> Path:
    """A copy of the packages the child imports, readable by the daemon's user: the checkout may
    sit in a home that user cannot enter (root's is 0700)."""
    source = root / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in ("runtime", "memory", "skills", "learner", "tests/security"):
        shutil.copytree(REPO / package, source / package, ignore=ignore)
    for directory, _dirs, files in os.walk(source):
        os.chmod(directory, 0o755)
        for name in files:
            os.chmod(os.path.join(directory, name), 0o644)
    return source


def _daemon_environment(canaries: Canaries, source: Path) -> dict[str, str]:
    """A daemon's environment: its HOME, API keys (canaries), and what finds the engine. The
    packages come from this interpreter's site-packages (the child may be another Python)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": canaries.home,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join([str(source), *site.getsitepackages()]),
        **canaries.environment,
    }
    if "DOCKER_HOST" in os.environ:
        env["DOCKER_HOST"] = os.environ["DOCKER_HOST"]
    return env


def _drop_to(owner: tuple[int, int]) -> dict[str, Any]:
    """subprocess arguments that run the child as `owner` (with the engine socket's group, as
    a daemon using docker has), or nothing when that is us already."""
    if (os.getuid(), os.getgid()) == owner:
        return {}
    groups = []
    socket = _engine_socket()
    if socket and os.path.exists(socket):
        groups.append(os.stat(socket).st_gid)
    return {"user": owner[0], "group": owner[1], "extra_groups": groups}


def _interpreter(drop: dict[str, Any], env: dict[str, str], source: Path) -> str:
    """A Python of this version that the child's user may run: this one, or the system's (a
    virtual environment's interpreter may live in root's 0700 home)."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    failures = []
    for candidate in (sys.executable, f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"):
        try:
            subprocess.run([candidate, "-c", "import runtime.sandbox"], env=env, cwd=source, check=True,
                           capture_output=True, text=True, timeout=60, **drop)  # fmt: skip
        except OSError as error:
            failures.append(f"{candidate}: {error.strerror}")
        except subprocess.CalledProcessError as error:
            failures.append(f"{candidate}: {error.stderr.strip().splitlines()[-1:]}")
        else:
            return candidate
    raise BatteryError(
        f"no Python {version} that the daemon's user can run and import runtime with (the checkout "
        f"and the virtual environment must be readable by that user): {'; '.join(failures)}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run the red-team battery as this user.")
    parser.add_argument("backend", help="docker, bwrap or local; or replay: the learner's replays")
    parser.add_argument("workspace_root", type=Path)
    parser.add_argument("--canary", help="unused: puts a canary on this process's command line")
    parser.add_argument("--only", help=f"attempt names or kinds, comma-separated ({', '.join(KINDS)})")
    args = parser.parse_args(argv)
    canaries = Canaries.from_json(sys.stdin.read())
    only = args.only.split(",") if args.only else None
    if args.backend == "replay":
        from tests.security.replays import run_replay_battery  # the learner: only when asked

        result = asyncio.run(run_replay_battery(args.workspace_root, canaries))
    else:
        result = asyncio.run(run_battery(args.backend, args.workspace_root, canaries, only=only))
    print(result.to_json())


if __name__ == "__main__":
    main()
