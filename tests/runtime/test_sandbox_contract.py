"""The contract every sandbox backend keeps: commands, exit codes, timeouts that kill the whole
tree, bounded output, files, snapshots, a clean environment and a lifecycle."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from pathlib import Path

import pytest

from runtime.sandbox import (
    BackendName,
    Sandbox,
    SandboxOptions,
    SandboxStateError,
    Snapshot,
    WorkspacePathError,
    open_sandbox,
)

pytestmark = pytest.mark.anyio

HEARTBEAT = "echo 0 > beat; (i=0; while [ $i -lt 100 ]; do i=$((i+1)); echo $i > beat; sleep 0.05; done) &"


async def assert_heartbeat_stopped(sandbox: Sandbox) -> None:
    """The background writer of `beat` is dead: the file no longer changes."""
    await asyncio.sleep(0.2)
    before = await sandbox.read_file("beat")
    await asyncio.sleep(0.3)
    assert await sandbox.read_file("beat") == before


async def test_run_returns_output_and_exit_code(sandbox: Sandbox) -> None:
    result = await sandbox.run("echo out; echo err >&2; exit 3", timeout_s=10)
    assert result.exit_code == 3
    assert not result.timed_out and not result.ok
    assert "out\n" in result.output and "err\n" in result.output
    assert result.duration_s > 0


async def test_a_command_killed_by_a_signal_reports_128_plus_signal(sandbox: Sandbox) -> None:
    result = await sandbox.run("kill -9 $$", timeout_s=10)
    assert (result.exit_code, result.timed_out) == (137, False)


async def test_commands_run_in_the_workspace(sandbox: Sandbox) -> None:
    result = await sandbox.run("pwd", timeout_s=10)
    assert result.output.strip() == sandbox.workdir


async def test_timeout_kills_the_whole_tree(sandbox: Sandbox) -> None:
    result = await sandbox.run(f"{HEARTBEAT} sleep 30", timeout_s=0.5)
    assert result.timed_out and result.exit_code == 137
    assert result.duration_s < 5
    await assert_heartbeat_stopped(sandbox)


async def test_background_process_does_not_outlive_its_command(sandbox: Sandbox) -> None:
    result = await sandbox.run(f"{HEARTBEAT} sleep 0.3; echo started", timeout_s=10)
    assert result.ok and result.output == "started\n"
    assert result.duration_s < 3, "run() waited for the background process instead of killing it"
    await assert_heartbeat_stopped(sandbox)


async def test_output_keeps_head_and_tail_and_counts_the_rest(sandbox: Sandbox) -> None:
    result = await sandbox.run("printf HEAD; head -c 100000 /dev/zero | tr '\\0' x; printf TAIL", 10)
    assert result.output_bytes == 100008
    assert result.output.startswith("HEADxxx") and result.output.endswith("xxxTAIL")
    assert f"…[{100008 - 4096} bytes elided]…" in result.output
    assert result.elided_bytes == 100008 - 4096


async def test_endless_output_is_cut_at_the_timeout(sandbox: Sandbox) -> None:
    result = await sandbox.run("yes", timeout_s=0.5)
    assert result.timed_out
    assert result.output_bytes > 4096 and len(result.output.encode()) < 4096 + 100


async def test_files_pass_both_ways(sandbox: Sandbox) -> None:
    await sandbox.write_file("src/greeting.txt", "hello")
    await sandbox.write_file("run.sh", "#!/bin/sh\necho ran\n", mode=0o755)
    result = await sandbox.run("cat src/greeting.txt; echo; ./run.sh; echo made > out.txt", 10)
    assert result.output == "hello\nran\n"
    assert await sandbox.read_file("out.txt") == b"made\n"
    assert await sandbox.read_file(f"{sandbox.workdir}/out.txt") == b"made\n"


async def test_file_paths_cannot_leave_the_workspace(sandbox: Sandbox) -> None:
    await sandbox.run("ln -s /etc/hostname link; mkdir d; ln -s / d/root; mkfifo pipe", 10)
    for path in ["../escape", "/etc/hostname", "link", "d/root/etc/hostname", "pipe", "d"]:
        with pytest.raises(WorkspacePathError):
            await sandbox.read_file(path)
    for path in ["../escape", "link", "d/root/tmp/planted", "pipe"]:
        with pytest.raises(WorkspacePathError):
            await sandbox.write_file(path, "x")
    assert not Path("/tmp/planted").exists()


async def test_snapshot_restores_into_a_fresh_sandbox(
    sandbox: Sandbox, sandbox_backend: BackendName, sandbox_options: SandboxOptions, tmp_path: Path
) -> None:
    await sandbox.write_file("data/numbers.txt", "1 2 3\n")
    await sandbox.write_file("run.sh", "#!/bin/sh\necho restored\n", mode=0o755)
    await sandbox.run("ln -s data/numbers.txt link; mkdir -p empty/dir", 10)
    snapshot = await sandbox.snapshot(tmp_path / "store")
    assert re.fullmatch(r"[0-9a-f]{64}", snapshot.id) and snapshot.path.is_file()
    assert (await sandbox.snapshot(tmp_path / "store")) == snapshot, "same tree, same id"
    assert Snapshot.load(tmp_path / "store", snapshot.id) == snapshot

    async with open_sandbox(sandbox_backend, workspace=snapshot, options=sandbox_options) as fresh:
        result = await fresh.run("cat link; ./run.sh; test -d empty/dir && echo dir", 10)
        assert result.output == "1 2 3\nrestored\ndir\n"
        await fresh.run("echo changed > data/numbers.txt", 10)
    assert await sandbox.read_file("data/numbers.txt") == b"1 2 3\n"


async def test_commands_see_a_clean_environment_plus_what_is_given(
    sandbox_backend: BackendName, sandbox_options: SandboxOptions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPER_TEST_API_KEY", "sk-host-secret")
    options = replace(sandbox_options, env={"TASK_MODE": "replay"})
    async with open_sandbox(sandbox_backend, options=options) as sandbox:
        result = await sandbox.run("env", 10)
    assert "sk-host-secret" not in result.output
    assert "TASK_MODE=replay" in result.output and "PATH=" in result.output


async def test_stop_removes_the_workspace_and_ends_the_sandbox(sandbox: Sandbox) -> None:
    workspace = sandbox.workspace
    await sandbox.stop()
    assert not workspace.exists()
    with pytest.raises(SandboxStateError):
        await sandbox.run("true", 10)
    await sandbox.stop()  # twice is fine
