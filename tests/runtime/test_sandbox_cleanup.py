"""A sandbox's directory is removed however the sandbox ends: stopped, cancelled while it starts
(its workspace half restored from a snapshot), or cancelled while its stop waits for a running
command. Each backend makes its roots under a directory of the test's own, which must be empty
at the end: a leaked root per sandbox fills a daemon's disk (a replay opens hundreds a night)."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from memory import MemoryStore
from runtime.agent import Agent, AgentSettings
from runtime.events import Replied
from runtime.inbound import Inbound
from runtime.models import ChatModel, ModelSettings, RetryPolicy
from runtime.sandbox import (
    BackendName,
    BackendStatus,
    Sandbox,
    SandboxOptions,
    Snapshot,
    open_sandbox,
    take_snapshot,
)
from runtime.tools import builtin_toolbox
from runtime.user_model import UserModelSettings
from runtime.workspaces import Workspaces
from tests.fakes.daemon_setup import until
from tests.fakes.openai_server import FakeOpenAI
from tests.sandbox_backends import require

pytestmark = pytest.mark.anyio


def leftovers(roots: Path) -> list[str]:
    return sorted(path.name for path in roots.iterdir())


@pytest.fixture
def roots() -> Iterator[Path]:
    """Where the sandboxes' roots are made: outside pytest's own temp dir, which is private
    to the user running the tests, so that a sandbox running as nobody (when tests run as root)
    can reach its workspace."""
    path = Path(tempfile.mkdtemp(prefix="temper-test-roots-"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path)


@pytest.fixture
def options(sandbox_options: SandboxOptions, roots: Path) -> SandboxOptions:
    return replace(sandbox_options, workdir_root=roots)


@pytest.fixture
def big_snapshot(tmp_path: Path) -> Snapshot:
    """A workspace that takes a while to restore (tens of ms), so a cancellation lands mid-way."""
    source = tmp_path / "source"
    source.mkdir()
    for index in range(200):
        (source / f"file{index}.txt").write_text("x" * 1000)
    return take_snapshot(source, tmp_path / "snapshots")


async def test_a_stopped_sandbox_leaves_no_directory(
    sandbox_backend: BackendName, options: SandboxOptions, roots: Path
) -> None:
    async with open_sandbox(sandbox_backend, options=options) as sandbox:
        made = await sandbox.run("mkdir -p deep/er && echo hi > deep/er/file", timeout_s=10)
        assert made.ok and leftovers(roots) != []
    assert leftovers(roots) == []


async def test_a_sandbox_cancelled_while_its_workspace_is_restored_leaves_no_directory(
    sandbox_backend: BackendName, options: SandboxOptions, roots: Path, big_snapshot: Snapshot
) -> None:
    async def attempt() -> None:
        async with open_sandbox(sandbox_backend, workspace=big_snapshot, options=options) as sandbox:
            await sandbox.run("sleep 2", timeout_s=20)

    for _ in range(3):
        starting = asyncio.create_task(attempt())
        await until(lambda: leftovers(roots))  # the root exists: its workspace is being restored
        starting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await starting
        assert leftovers(roots) == []


async def test_many_sandboxes_cancelled_together_leave_no_directory(
    sandbox_backend: BackendName, options: SandboxOptions, roots: Path, big_snapshot: Snapshot
) -> None:
    """As a replay's attempts are when one of them fails: some queued for a thread to restore
    their workspace, some restoring it, some booting, some running a command."""

    async def attempt() -> None:
        async with open_sandbox(sandbox_backend, workspace=big_snapshot, options=options) as sandbox:
            await sandbox.run("sleep 2", timeout_s=20)

    for delay in (0.005, 0.05, 0.2):
        attempts = [asyncio.create_task(attempt()) for _ in range(8)]
        await asyncio.sleep(delay)
        for task in attempts:
            task.cancel()
        await asyncio.gather(*attempts, return_exceptions=True)
        assert leftovers(roots) == []


async def test_a_docker_sandbox_cancelled_while_its_container_is_made_leaves_nothing(
    sandbox_statuses: dict[str, BackendStatus], options: SandboxOptions, roots: Path
) -> None:
    """A cancellation while the engine creates and starts the container. Left to go on in its
    thread, the creation reached the engine after the root was removed: the engine made the
    bind mount's missing source again (as root) and the container stayed. The start is timed
    first, then cancelled at points across it, then given as long again to leave anything."""
    require(sandbox_statuses["docker"])
    began = time.monotonic()
    sandbox = await open_sandbox("docker", options=options).__aenter__()
    start_s = time.monotonic() - began
    await sandbox.stop()
    for fraction in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1):
        starting = asyncio.create_task(open_sandbox("docker", options=options).__aenter__())
        await asyncio.sleep(start_s * fraction)
        starting.cancel()
        [outcome] = await asyncio.gather(starting, return_exceptions=True)
        if isinstance(outcome, Sandbox):  # it had started before the cancel came
            await outcome.stop()
        else:
            assert isinstance(outcome, asyncio.CancelledError), outcome
        await asyncio.sleep(start_s)
        assert leftovers(roots) == [], fraction
        assert await asyncio.to_thread(containers_mounting, roots) == [], fraction


def containers_mounting(roots: Path) -> list[str]:
    import docker

    client = docker.from_env()
    try:
        found = client.containers.list(all=True, filters={"label": "temper.sandbox"})
        return [
            container.name
            for container in found
            if any(m["Source"].startswith(str(roots)) for m in container.attrs["Mounts"])
        ]
    finally:
        client.close()


def processes_naming(marker: str) -> list[str]:
    """The host processes whose command line holds `marker` (bwrap's holds its command)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:  # ended while we looked
            continue
        if marker.encode() in cmdline:
            words = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{entry.name}: {words[:200]}")
    return found


@pytest.mark.parametrize("host_backend", ["bwrap", "local"])
async def test_commands_cancelled_as_they_start_leave_no_process_and_do_not_hang(
    host_backend: BackendName,
    require_sandbox: Callable[[str], None],
    options: SandboxOptions,
) -> None:
    """A command cancelled in the first loop iterations of its start, while asyncio connects its
    pipes. Left to asyncio, that cancellation kills only the direct child (bwrap's outer process)
    and then waits for the pipes to close; bwrap's inner process, cloned but not yet told by its
    killed parent to go on, waits for that word forever, holding the pipe open: the cancelled
    task hung and the process stayed (a CI run timed out so, under load)."""
    require_sandbox(host_backend)
    marker = f"temper-cancel-{uuid.uuid4().hex}"
    sandboxes = [await open_sandbox(host_backend, options=options) for _ in range(8)]
    try:
        for iterations in [0, 1, 2, 3, 4, 6, 8, 12] * 3:
            runs = [
                asyncio.create_task(sandbox.run(f"sleep 30 # {marker}", timeout_s=60))
                for sandbox in sandboxes
            ]
            for _ in range(iterations):
                await asyncio.sleep(0)
            for run in runs:
                run.cancel()
            _, hung = await asyncio.wait(runs, timeout=20)
            assert not hung, f"{len(hung)} cancelled commands still wait, {iterations} iterations in"
    finally:  # bounded: a hung command holds its sandbox's lock, which a stop waits for
        await asyncio.wait_for(asyncio.gather(*(sandbox.stop() for sandbox in sandboxes)), 30)
    try:  # a killed process takes a moment to leave /proc
        await until(lambda: not processes_naming(marker), timeout_s=5)
    except AssertionError:
        raise AssertionError(f"still running: {processes_naming(marker)}") from None


async def test_a_stop_cancelled_while_a_command_runs_still_removes_the_directory(
    sandbox_backend: BackendName, options: SandboxOptions, roots: Path
) -> None:
    sandbox = await open_sandbox(sandbox_backend, options=options)
    command = asyncio.create_task(sandbox.run("touch started; sleep 2", timeout_s=10))
    await until((sandbox.workspace / "started").exists)
    # The command holds the sandbox's lock: the stop waits for it.
    stopping = asyncio.create_task(sandbox.stop())
    await asyncio.sleep(0.1)
    stopping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopping
    assert leftovers(roots) == []
    assert (await command).ok  # a removed workspace does not keep a running command from ending
    assert leftovers(roots) == []


async def test_closing_the_workspaces_stops_every_sandbox_when_a_snapshot_fails(
    sandbox_backend: BackendName, options: SandboxOptions, roots: Path, tmp_path: Path
) -> None:
    """The runtime's shutdown: a workspace that cannot be snapshotted (here: the snapshot store
    is a file) does not keep the sessions after it from being stopped."""
    not_a_directory = tmp_path / "snapshots"
    not_a_directory.write_text("")
    reported: list[tuple[int, str]] = []
    workspaces = Workspaces(sandbox_backend, options, not_a_directory, lambda *saved: reported.append(saved))
    for session_id in (1, 2, 3):
        await workspaces.get(session_id, None)
    assert len(leftovers(roots)) == 3
    with pytest.raises(OSError):
        await workspaces.close()
    assert leftovers(roots) == [] and reported == []
    assert not any(workspaces.is_open(session_id) for session_id in (1, 2, 3))


@pytest.mark.skipif(os.geteuid() == 0, reason="root unlinks whatever the modes say: needs a non-root user")
async def test_what_a_command_made_read_only_is_removed_too(
    sandbox_backend: BackendName, options: SandboxOptions, roots: Path
) -> None:
    async with open_sandbox(sandbox_backend, options=options) as sandbox:
        made = await sandbox.run("mkdir -p a/b && touch a/b/f && chmod 555 a/b && chmod 000 a", timeout_s=10)
        assert made.ok
    assert leftovers(roots) == []


async def test_an_agent_closed_before_its_after_reply_work_ends_still_removes_its_sandboxes(
    store: MemoryStore, server: FakeOpenAI, options: SandboxOptions, roots: Path, tmp_path: Path
) -> None:
    """The daemon's forced exit gives `Agent.close` a second: the sandboxes go even when the
    after-reply work (a model call, here a slow one) is still running when that second is up."""
    planner = ChatModel(
        ModelSettings(
            "openai/planner", api_base=server.base_url, api_key="sk-test", retry=RetryPolicy(max_retries=0)
        )
    )
    workspaces = Workspaces("local", options, tmp_path / "snapshots", store.set_workspace_snapshot)
    settings = AgentSettings(user_model=UserModelSettings(every_turns=1))  # a model call after each turn
    agent = Agent(store, planner, builtin_toolbox(), workspaces, settings=settings)
    server.enqueue(tool_calls=[{"name": "shell", "arguments": {"command": "echo hi > note.txt"}}])
    server.enqueue(text="Done.")
    server.enqueue(text="{}", delay=5)  # the after-reply work: facts about the person, slowly
    inbound = Inbound(platform="cli", chat_id="c1", user_id="ana", text="write a note")
    events = [event async for event in agent.turn(inbound)]
    assert [event.text for event in events if isinstance(event, Replied)] == ["Done."]
    assert len(leftovers(roots)) == 1
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(agent.close(), 0.5)
    assert leftovers(roots) == []
