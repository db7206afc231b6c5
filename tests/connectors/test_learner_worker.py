"""The nightly cycle in its worker process (connectors/nightly/, connectors/daemon/nightly.py):
the progress file and what `temper status` makes of it, cancellation, the config reaching the
worker, the daemon answering while a real worker trains, a failing worker, the report to chat.

The slow tests run the real worker on the tiny executor model (runtime/executor/tiny.py) against
the real daemon with the loopback channel (tests/fakes/loopback_channel.py)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from connectors.cli import app
from connectors.config import Config, load_config
from connectors.daemon import Daemon
from connectors.daemon.status import render
from connectors.nightly.progress import (
    ENDED,
    own_cmdline,
    progress_path,
    read_progress,
    render_progress,
    request_cancel,
)
from connectors.nightly.runner import NightlyRun, NightlySettings, WorkerFailed, _config_json
from connectors.nightly.worker import CycleCancelled, CycleWatch, worker_environment
from memory import MemoryStore
from tests.connectors.test_daemon import FAST
from tests.fakes.daemon_setup import base_config, until
from tests.fakes.loopback_channel import LoopbackChannel, LoopbackPlatform
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def learner_config(tmp_path: Path, server: FakeOpenAI, model_dir: Path, extra: str = "") -> Path:
    path = tmp_path / "config.toml"
    text = base_config(tmp_path / "data", server.base_url).replace(
        "[executor]\nenabled = false\n", f'[executor]\nbackend = "local"\nmodel_dir = "{model_dir}"\n'
    )
    path.write_text(text + '[learner]\nreport_to = ["loopback:c-ops"]\n' + extra)
    return path


def daemon_for(config: Config, platform: LoopbackPlatform, nightly: NightlySettings) -> Daemon:
    return Daemon(
        config,
        channels={"loopback": lambda _config: LoopbackChannel(platform.path)},
        settings=replace(FAST, learner=nightly),
        environ={},
    )


@asynccontextmanager
async def running(daemon: Daemon) -> AsyncIterator[Daemon]:
    task = asyncio.create_task(daemon.serve())
    await until(lambda: daemon.scheduler is not None and daemon.supervisors["loopback"].channel is not None)
    try:
        yield daemon
    finally:
        daemon.should_exit = True
        assert await task == 0


def let_in(config: Config, user: str) -> None:
    with MemoryStore.open(config.memory.db_path) as store:
        store.access.grant("loopback", user)


async def reply_latency(platform: LoopbackPlatform, server: FakeOpenAI, text: str) -> float:
    before = len(platform.sent())
    server.enqueue(text="pong")
    started = time.monotonic()
    platform.say("ana", text)
    await until(lambda: len(platform.sent()) > before, timeout_s=30)
    return time.monotonic() - started


# --- the progress file -------------------------------------------------------------------------


def test_the_watch_writes_phases_an_eta_and_stops_at_a_boundary_once_cancelled(tmp_path: Path) -> None:
    now = [1000.0]
    path = tmp_path / "progress.json"
    watch = CycleWatch(path, clock=lambda: now[0])
    watch({"phase": "collect", "iterations": 4, "deadline": 5000.0})
    assert read_json(path)["phase"] == "collect" and read_json(path)["pid"] == os.getpid()
    now[0] = 1010.0
    watch({"phase": "train", "iteration": 1, "iterations": 4, "reward": 0.25})
    progress = read_json(path)
    assert (progress["phase"], progress["iteration"], progress["reward"]) == ("train", 1, 0.25)
    assert progress["eta"] == pytest.approx(1010.0 + 3 * 10.0)  # 10 s an iteration, 3 left
    watch.cancel("asked to stop (SIGTERM)")
    now[0] = 1020.0
    with pytest.raises(CycleCancelled):
        watch({"phase": "train", "iteration": 2, "iterations": 4, "reward": 0.5})
    assert read_json(path)["iteration"] == 2  # written before stopping: the checkpoint is this step's


def test_the_last_iteration_moves_on_to_the_gate(tmp_path: Path) -> None:
    watch = CycleWatch(tmp_path / "progress.json")
    watch({"phase": "collect", "iterations": 2, "deadline": time.time() + 600})
    watch({"phase": "train", "iteration": 2, "iterations": 2, "reward": 0.5})
    assert read_json(tmp_path / "progress.json")["phase"] == "gate"


def test_status_shows_a_running_cycle_an_interrupted_one_and_the_last_outcome(tmp_path: Path) -> None:
    running = {
        "pid": os.getpid(), "cmdline": own_cmdline(), "phase": "train", "iteration": 3,
        "iterations": 10, "reward": 0.4, "updated_at": time.time(), "eta": time.time() + 600,
    }  # fmt: skip
    line = render_progress(running)
    assert line is not None and "train, iteration 3/10, train reward 0.40, training ends ~" in line
    assert "in 9 min" in line or "in 10 min" in line
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    crashed = {**running, "pid": int(gone.stdout)}
    assert "last cycle interrupted (train at iteration 3/10" in (render_progress(crashed) or "")
    done = {**running, "phase": "done", "promoted": "v0002", "summary": "Learning cycle 2 trained."}
    assert "done, promoted v0002: Learning cycle 2 trained." in (render_progress(done) or "")
    lines = render(None, 0, 0, learner=running)
    assert any(line.startswith("cycle:     cycle running (pid") for line in lines)


def test_cancel_never_signals_a_process_that_is_not_the_worker(tmp_path: Path) -> None:
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        progress = {
            "pid": bystander.pid,
            "cmdline": ["python", "-m", "connectors.nightly.worker"],
            "phase": "train",
        }
        path = progress_path(tmp_path)
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(progress))
        assert request_cancel(tmp_path) is None  # a reused pid: not ours to stop
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_the_worker_gets_the_config_as_the_daemon_resolved_it_and_a_narrow_environment(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    path = learner_config(tmp_path, server, tmp_path / "model")
    path.write_text(path.read_text().replace('api_key_env = ""\n', 'api_key_env = "PLANNER_KEY"\n', 1))
    environ = {"PLANNER_KEY": "sk-test-1234", "TEMPER_LEARNER__NICE": "7"}
    config = load_config(path, environ)
    again = Config.model_validate_json(_config_json(config))
    assert again == config
    assert again.learner.nice == 7 and again.models.planner.api_key is not None
    assert again.models.planner.api_key.get_secret_value() == "sk-test-1234"
    environment = worker_environment({**environ, "PATH": "/usr/bin", "SLACK_BOT_TOKEN": "xoxb-1"}, 3)
    assert environment["PATH"] == "/usr/bin" and environment["OMP_NUM_THREADS"] == "3"
    assert "PLANNER_KEY" not in environment and "SLACK_BOT_TOKEN" not in environment
    assert not any(name.startswith("TEMPER_") for name in environment)


# --- the worker for real -----------------------------------------------------------------------


@pytest.mark.slow
async def test_a_crashing_worker_fails_the_job_with_its_log_and_the_daemon_goes_on(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    from runtime.executor import build_tiny_model

    model_dir = build_tiny_model(tmp_path / "tiny", seed=3)
    config = load_config(learner_config(tmp_path, server, model_dir), environ={})
    platform = LoopbackPlatform(tmp_path / "platform.db")
    let_in(config, "ana")
    async with running(daemon_for(config, platform, NightlySettings(iterations=50, per_family=1))) as daemon:
        assert daemon.scheduler is not None and daemon.learner is not None
        job = daemon.scheduler.start("learner")
        await until(lambda: cycle_started(config.data_dir), timeout_s=120)
        assert daemon.learner.process is not None
        os.kill(daemon.learner.process.pid, signal.SIGKILL)  # out of memory, say
        run = await job
        assert run.ok is False and "worker failed (killed by SIGKILL)" in run.detail
        assert "learning cycle worker pid" in run.detail  # the log's tail
        assert await reply_latency(platform, server, "still there?") < 5
        [notice] = [s for s in platform.sent() if s.chat_id == "c-ops"]  # report_to
        assert notice.text.startswith("temper's learning cycle failed")
    assert "last cycle interrupted (" in (render_progress(read_progress(config.data_dir)) or "")


@pytest.mark.slow
async def test_the_daemon_keeps_answering_while_the_worker_trains(tmp_path: Path, server: FakeOpenAI) -> None:
    from runtime.executor import build_tiny_model

    model_dir = build_tiny_model(tmp_path / "tiny", seed=3)
    config = load_config(learner_config(tmp_path, server, model_dir), environ={})
    platform = LoopbackPlatform(tmp_path / "platform.db")
    let_in(config, "ana")
    lags: list[float] = []

    async def ticker() -> None:  # how late the event loop wakes a 50 ms sleeper
        while True:
            started = time.monotonic()
            await asyncio.sleep(0.05)
            lags.append(time.monotonic() - started - 0.05)

    daemon = daemon_for(config, platform, NightlySettings(iterations=50, per_family=1))
    async with running(daemon):
        idle = [await reply_latency(platform, server, f"idle {i}") for i in range(8)]
        assert daemon.scheduler is not None
        job = daemon.scheduler.start("learner")
        await until(lambda: cycle_started(config.data_dir), timeout_s=120)
        await asyncio.sleep(3)  # the worker loads torch, the model, and starts replaying
        ticking = asyncio.create_task(ticker())
        training = [await reply_latency(platform, server, f"busy {i}") for i in range(8)]
        ticking.cancel()
        worker = read_progress(config.data_dir) or {}
        assert (
            worker.get("phase") in ("collect", "distill", "train") and not job.done()
        )  # it was training throughout
        assert os.getpriority(os.PRIO_PROCESS, worker["pid"]) >= config.learner.nice
    # The graceful shutdown stopped the worker (at a step boundary, or killed after the drain time).
    assert job.done() and not _alive(worker["pid"])
    assert job.result().ok and job.result().detail.startswith("cancelled (stopped with the daemon)")
    p50_idle, p50_training = statistics.median(idle), statistics.median(training)
    print(
        f"reply p50 idle {p50_idle * 1000:.0f} ms, training {p50_training * 1000:.0f} ms; loop lag max {max(lags) * 1000:.0f} ms"
    )
    assert p50_training <= 3 * p50_idle + 0.25
    assert max(lags) < 0.5


@pytest.mark.slow
async def test_cancel_stops_the_worker_at_a_step_and_the_next_run_resumes_its_cycle(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    from runtime.executor import build_tiny_model

    model_dir = build_tiny_model(tmp_path / "tiny", seed=3)
    config_file = learner_config(tmp_path, server, model_dir)
    config = load_config(config_file, environ={})
    first = NightlyRun(config, NightlySettings(iterations=50, per_family=1))
    running_cycle = asyncio.create_task(first.run())
    await until(lambda: cycle_started(config.data_dir), timeout_s=120)
    cancelled = CliRunner().invoke(app, ["--config", str(config_file), "learn", "--cancel"])
    assert cancelled.exit_code == 0 and "Asked the learning cycle" in cancelled.output
    outcome = await asyncio.wait_for(running_cycle, 600)
    progress = read_progress(config.data_dir) or {}
    assert (outcome.phase, progress["phase"], progress["iteration"]) == ("cancelled", "cancelled", 1)
    assert "cancelled at iteration 1" in (render_progress(progress) or "")
    [cycle_dir] = (config.data_dir / "learner" / "cycles").iterdir()
    assert not (cycle_dir / "done").exists()

    # The next run works in the same cycle directory; killed hard, it leaves an interrupted cycle.
    second = NightlyRun(config, NightlySettings(iterations=50, per_family=1))
    resumed = asyncio.create_task(second.run())
    log = config.data_dir / "learner" / "worker.log"
    await until(lambda: log.read_text().count(f"cycle in {cycle_dir}") == 2, timeout_s=120)
    assert second.process is not None
    os.kill(second.process.pid, signal.SIGKILL)
    with pytest.raises(WorkerFailed, match="killed by SIGKILL"):
        await resumed
    assert "last cycle interrupted" in (render_progress(read_progress(config.data_dir)) or "")
    assert [p.name for p in (config.data_dir / "learner" / "cycles").iterdir()] == [cycle_dir.name]


def cycle_started(data_dir: Path) -> bool:
    """The worker has begun its cycle and not ended it. Any running phase counts: with no
    episodes to harvest, "collect" can pass between two polls."""
    phase = (read_progress(data_dir) or {}).get("phase")
    return phase is not None and phase not in ENDED


def read_json(path: Path) -> dict[str, object]:
    return json.loads(path.read_text())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
