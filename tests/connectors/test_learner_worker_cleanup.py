"""A learning-cycle worker killed while it replays tasks (out of memory, or killed after the
daemon's drain time) leaves none of its sandboxes' directories behind: the worker's TMPDIR is a
directory of the runner's, removed when the worker exits (connectors/nightly/runner.py)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from connectors.config import load_config
from connectors.nightly.runner import NightlyRun, NightlySettings, WorkerFailed
from tests.connectors.test_learner_worker import learner_config
from tests.fakes.daemon_setup import until
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def sandbox_roots(temp_root: Path) -> list[Path]:
    """Sandbox directories in the temp dir, or in a directory there (the worker's own)."""
    try:
        return [*temp_root.glob("temper-sandbox-*"), *temp_root.glob("*/temper-sandbox-*")]
    except FileNotFoundError:  # a directory went away while it was listed
        return []


@pytest.mark.slow  # ~30 s: the worker imports torch, loads the tiny model and starts replaying
async def test_a_worker_killed_mid_replay_leaves_no_sandbox_directory(
    tmp_path: Path, server: FakeOpenAI, temp_root: Path
) -> None:
    from runtime.executor import build_tiny_model

    model_dir = build_tiny_model(tmp_path / "tiny", seed=3)
    config = load_config(learner_config(tmp_path, server, model_dir), environ={})
    run = NightlyRun(
        config, NightlySettings(iterations=50, per_family=1), {**os.environ, "TMPDIR": str(temp_root)}
    )
    running = asyncio.create_task(run.run())
    await until(lambda: bool(sandbox_roots(temp_root)), timeout_s=180)
    assert run.process is not None
    os.kill(run.process.pid, signal.SIGKILL)
    with pytest.raises(WorkerFailed, match="killed by SIGKILL"):
        await running
    left = sorted(path.name for path in temp_root.iterdir() if path.name.startswith("temper-"))
    assert left == []  # neither the worker's directory nor a sandbox's
