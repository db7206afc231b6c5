"""Escape attempts, per backend: network, host files, writes outside the workspace, fork and
memory bombs, and a process that leaves its session to outlive the command.

`local` contains only what rlimits and a process-group kill can: the escapes it cannot stop are
marked as expected failures (strict: if one starts passing, the table below is wrong).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pty
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.sandbox import BackendName, Sandbox

pytestmark = pytest.mark.anyio

EXPECTED_WEAK: dict[str, dict[str, str]] = {
    "local": {
        "network": "local runs in the host's network namespace",
        "host_files": "local reads whatever the host user can read",
        "outside_writes": "local writes wherever the host user can write",
        "setsid": "a process that calls setsid leaves the process group that local kills",
    },
}

CONNECT = """python3 - <<'EOF'
import socket, sys
try:
    socket.create_connection(("{host}", {port}), timeout=2).close()
except OSError as exc:
    print("blocked:", exc)
    sys.exit(1)
print("connected")
EOF"""


@pytest.fixture(autouse=True)
def expected_weakness(request: pytest.FixtureRequest, sandbox_backend: BackendName) -> None:
    marker = request.node.get_closest_marker("escape")
    reason = EXPECTED_WEAK.get(sandbox_backend, {}).get(marker.args[0]) if marker else None
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A world-readable, world-writable host directory outside the workspace (and outside
    pytest's own 0700 tmp tree, so only the sandbox, not file modes, can hide it)."""
    path = Path(tempfile.mkdtemp(prefix="temper-host-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path)


def escape(kind: str) -> pytest.MarkDecorator:
    return pytest.mark.escape(kind)


@escape("network")
async def test_cannot_reach_a_port_listening_on_the_host_loopback(sandbox: Sandbox) -> None:
    accepted: list[str] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append("connection")
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        result = await sandbox.run(CONNECT.format(host="127.0.0.1", port=port), timeout_s=10)
    assert "blocked:" in result.output, result.output
    assert accepted == []


@escape("network")
async def test_cannot_reach_an_external_address(sandbox: Sandbox) -> None:
    result = await sandbox.run(CONNECT.format(host="1.1.1.1", port=53), timeout_s=10)
    assert "blocked:" in result.output, result.output
    interfaces = await sandbox.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '", timeout_s=10)
    assert interfaces.output.split() == ["lo"]


@escape("host_files")
async def test_cannot_read_a_host_secret(sandbox: Sandbox, host_dir: Path) -> None:
    secret = host_dir / "credentials.txt"
    secret.write_text("TOPSECRET-1234\n")
    secret.chmod(0o644)
    result = await sandbox.run(f"cat {secret}", 10)
    assert result.exit_code != 0 and "TOPSECRET" not in result.output
    listing = await sandbox.run("ls -a /tmp", 10)
    assert host_dir.name not in listing.output, "the host's /tmp is visible"


@escape("outside_writes")
async def test_cannot_write_outside_the_workspace(sandbox: Sandbox, host_dir: Path) -> None:
    await sandbox.run(f"echo pwned > {host_dir}/planted; echo pwned > /etc/temper-planted", 10)
    planted = [p for p in (host_dir / "planted", Path("/etc/temper-planted")) if p.exists()]
    for path in planted:
        path.unlink()
    assert planted == []


@escape("setsid")
async def test_a_process_that_leaves_the_session_dies_with_the_command(sandbox: Sandbox) -> None:
    loop = "i=0; while [ $i -lt 60 ]; do i=$((i+1)); echo $i > beat; sleep 0.05; done"
    result = await sandbox.run(f"echo 0 > beat; setsid sh -c '{loop}' >/dev/null 2>&1 & sleep 30", 0.5)
    assert result.timed_out
    await asyncio.sleep(0.2)
    before = await sandbox.read_file("beat")
    await asyncio.sleep(0.3)
    assert await sandbox.read_file("beat") == before


# Runs a command in a sandbox from a process whose controlling terminal is a pty, as
# `temper chat` in a terminal is, and prints whether the command could open that terminal.
FROM_A_TERMINAL = """
import asyncio, sys
from runtime.sandbox import open_sandbox
from tests.runtime.conftest import TEST_OPTIONS

async def main():
    async with open_sandbox(sys.argv[1], options=TEST_OPTIONS) as sandbox:
        result = await sandbox.run("exec 3</dev/tty && echo opened", timeout_s=10)
    print("RESULT", result.ok, "opened" in result.output)

asyncio.run(main())
"""


def test_a_command_cannot_reach_the_terminal_temper_runs_in(sandbox_backend: BackendName) -> None:
    """With the daemon's terminal in reach, TIOCSTI could push keystrokes into it: each command
    runs in a session of its own, without a controlling terminal."""
    pid, terminal = pty.fork()  # the child: a new session whose controlling terminal is the pty
    if pid == 0:  # never return into pytest from the forked child, even if the exec fails
        try:
            os.execv(sys.executable, [sys.executable, "-c", FROM_A_TERMINAL, sandbox_backend])
        finally:
            os._exit(127)
    printed = b""
    with contextlib.suppress(OSError):  # EIO once the child has exited
        while chunk := os.read(terminal, 4096):
            printed += chunk
    os.close(terminal)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, printed.decode(errors="replace")
    assert b"RESULT False False" in printed, printed.decode(errors="replace")


@pytest.mark.slow
@escape("fork_bomb")
async def test_a_fork_bomb_hits_the_pids_limit_and_ends(sandbox: Sandbox) -> None:
    result = await sandbox.run("bomb() { bomb | bomb & }; bomb; sleep 30", timeout_s=2)
    # Either the command is killed at its timeout, or the limit is hit so fast that the shell
    # cannot even fork its `sleep` and ends at once (seen with docker's pids limit): contained.
    hit_the_limit = result.exit_code != 0 and "fork" in result.output.lower()
    assert (result.timed_out or hit_the_limit) and result.duration_s < 15
    host = await asyncio.create_subprocess_exec("true")
    assert await asyncio.wait_for(host.wait(), 5) == 0, "the host could not start a process"
    after = await sandbox.run("echo alive", timeout_s=10)
    assert after.output == "alive\n"


@escape("memory_bomb")
async def test_a_memory_bomb_is_stopped_at_the_memory_limit(sandbox: Sandbox) -> None:
    bomb = "python3 -c \"x = []\nwhile True: x.append(b'x' * (16 << 20))\""
    result = await sandbox.run(bomb, timeout_s=20)
    assert not result.timed_out and result.exit_code != 0, result
    assert result.exit_code == 137 or "MemoryError" in result.output
    assert (await sandbox.run("echo alive", timeout_s=10)).output == "alive\n"


async def test_the_workspace_is_the_only_writable_host_path(sandbox: Sandbox) -> None:
    result = await sandbox.run("touch /usr/planted /planted 2>&1; id -u", 10)
    assert not Path("/usr/planted").exists() and not Path("/planted").exists()
    assert result.output.strip().splitlines()[-1] != "0", "commands must not run as root"
    assert os.path.exists(sandbox.workspace)
