"""The daemon's side of the nightly cycle: start the worker process, await it without blocking
the event loop, stop it on shutdown, and read its result.

    run = NightlyRun(config, NightlySettings(), environ)
    outcome = await run.run()         # the worker's CycleOutcome; raises WorkerFailed
    await run.stop(grace_s=30)        # SIGTERM: it stops at its next iteration boundary; then SIGKILL

The worker (connectors/nightly/worker.py) gets the daemon's resolved config on its stdin, so a
setting given by a `TEMPER_*` variable or a secret from the environment reaches it as the daemon
saw it, while its environment holds only what a Python process needs. Its output goes to
`<data_dir>/learner/worker.log`; a worker that fails or dies (killed, out of memory) becomes a
`WorkerFailed` carrying the last lines it logged. Its temporary files (TMPDIR: the directories
of the sandboxes it replays tasks in) are in a directory of its own, removed when it exits,
however it exits: one killed mid-replay leaves nothing behind. With `[learner] launcher =
"accelerate"` the worker is `[learner] processes` ranks under accelerate's launcher
(connectors/nightly/ranks.py): rank 0 gets the config and writes the result, the others train
with it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from connectors.nightly.progress import learner_dir
from connectors.nightly.worker import CycleOutcome, worker_environment

if TYPE_CHECKING:
    from connectors.config import Config

log = logging.getLogger("temper.learner")

WORKER_MODULE = "connectors.nightly.worker"
RANKS_MODULE = "connectors.nightly.ranks"  # the worker as several ranks, `[learner] launcher = "accelerate"`
LOG_FILE = "worker.log"
RESULT_FILE = "result.json"
TAIL_LINES = 8


class WorkerFailed(Exception):
    """The worker exited without a finished or cancelled cycle; the message ends with its log's tail."""


@dataclass(frozen=True)
class NightlySettings:
    iterations: int = 500  # at most this many training steps; the budget's minutes usually end it first
    per_family: int = 8  # synthetic tasks per family
    minutes: float | None = None  # the training budget; None: `[learner] budget_minutes`


class NightlyRun:
    def __init__(
        self,
        config: Config,
        settings: NightlySettings | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.settings = settings or NightlySettings()
        self.environ = dict(os.environ if environ is None else environ)
        self.directory = learner_dir(config.data_dir)
        self.log_file = self.directory / LOG_FILE
        self.process: asyncio.subprocess.Process | None = None
        self._stopped = False  # by `stop`: the daemon's shutdown, not a failure

    async def run(self, echo: Callable[[str], object] | None = None) -> CycleOutcome:
        """Run one cycle in a worker process to its end (done or cancelled); `echo` gets each
        line the worker logs as it is written (`temper learn --now` under a launcher)."""
        self._stopped = False
        self.directory.mkdir(parents=True, exist_ok=True)
        result_file = self.directory / RESULT_FILE
        result_file.unlink(missing_ok=True)
        log_file = self.log_file
        minutes = self.settings.minutes or self.config.learner.budget_minutes
        # The worker's temporary files (its sandboxes' directories above all) go here, removed
        # when it exits however it exits: a worker killed mid-replay cannot remove its own.
        scratch = Path(tempfile.mkdtemp(prefix="temper-learner-"))
        scratch.chmod(0o711)  # sandboxes run as nobody when we are root: their roots are in here
        environment = {
            **worker_environment(self.environ, self.config.learner.torch_threads),
            "TMPDIR": str(scratch),
        }
        arguments = [
            str(result_file), str(minutes), str(self.settings.iterations), str(self.settings.per_family),
            str(os.getpid()),
        ]  # fmt: skip
        try:
            problem = launcher_problem(self.config)
            if problem is not None:
                raise WorkerFailed(problem)
            with _open_log(log_file) as output:
                log_start = output.tell()
                self.process = await asyncio.create_subprocess_exec(
                    *worker_command(self.config, arguments),
                    stdin=asyncio.subprocess.PIPE, stdout=output, stderr=asyncio.subprocess.STDOUT,
                    env=environment,
                    start_new_session=True,  # a Ctrl-C at the daemon's terminal is the daemon's to handle
                )  # fmt: skip
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        log.info("learning cycle started in worker pid %d (log: %s)", self.process.pid, log_file)
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(_config_json(_with_executor_key(self.config, self.environ)).encode())
            await self.process.stdin.drain()
            self.process.stdin.close()
            if echo is None:
                code = await self.process.wait()
            else:
                code = await _echoing(self.process, log_file, log_start, echo)
        except asyncio.CancelledError:
            await self.stop(0.0)
            raise
        finally:
            self.process = None
            await asyncio.to_thread(shutil.rmtree, scratch, True)
        outcome = _read_outcome(result_file)
        if self._stopped and (code != 0 or outcome is None):
            return CycleOutcome(False, "cancelled", error="stopped with the daemon")
        if code == 0 and outcome is not None and outcome.phase == "failed":  # several ranks end so
            raise WorkerFailed(f"the learning cycle failed: {outcome.error}")
        if code != 0 or outcome is None or outcome.phase == "failed":
            why = f"exit code {code}" if code >= 0 else f"killed by {signal.Signals(-code).name}"
            raise WorkerFailed(f"the learning cycle's worker failed ({why}): {_tail(log_file, log_start)}")
        return outcome

    async def stop(self, grace_s: float) -> None:
        """Ask a running worker to stop (SIGTERM: at its next iteration boundary, after that
        step's checkpoint); kill it when it has not exited within `grace_s`."""
        process = self.process
        if process is None or process.returncode is not None:
            return
        log.info("stopping the learning cycle (pid %d)", process.pid)
        self._stopped = True
        try:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), grace_s)
                return
            except TimeoutError:
                log.warning(
                    "the learning cycle did not stop within %.0f s: killed; it resumes next run", grace_s
                )
            process.kill()
            await process.wait()
        except ProcessLookupError:
            pass  # it ended meanwhile


def worker_command(config: Config, arguments: list[str]) -> list[str]:
    """The worker's command line: one process, or `[learner] processes` ranks under accelerate's
    launcher (its torchrun mode, on a free local port), rank 0 being the worker."""
    learner = config.learner
    if learner.launcher == "none":
        return [sys.executable, "-m", WORKER_MODULE, *arguments]
    return [
        sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu",
        "--num_processes", str(learner.processes), "--num_machines", "1",
        "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(_free_port()),
        "-m", RANKS_MODULE, "--device", config.executor.device, "--nice", str(learner.nice), *arguments,
    ]  # fmt: skip


def launcher_problem(config: Config) -> str | None:
    """Why the configured launcher cannot start the worker here; None when it can."""
    if config.learner.launcher == "accelerate" and importlib.util.find_spec("accelerate") is None:
        return (
            '[learner] launcher = "accelerate" needs accelerate in this environment: '
            "pip install 'temper[gpu]'"
        )
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _open_log(path: Path) -> BinaryIO:
    """The worker's log, opened for appending after a header line for this run."""
    output = open(path, "ab")
    output.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} nightly cycle\n".encode())
    output.flush()
    return output


def _with_executor_key(config: Config, environ: Mapping[str, str]) -> Config:
    """The config with the executor server's API key read from the daemon's environment (the
    worker's holds no secrets), so a served executor is trained through the key it serves with."""
    from pydantic import SecretStr

    slot = config.models.executor
    key = environ.get(slot.api_key_env or "")
    if slot.api_key is not None or not key:
        return config
    models = config.models.model_copy(
        update={"executor": slot.model_copy(update={"api_key": SecretStr(key)})}
    )
    return config.model_copy(update={"models": models})


def _config_json(config: Config) -> str:
    """The config as the worker validates it again, secrets in clear (this goes down a pipe)."""
    from pydantic import SecretStr

    def plain(value: Any) -> Any:
        if isinstance(value, SecretStr):
            return value.get_secret_value()
        if isinstance(value, Path):
            return str(value)
        raise TypeError(f"cannot pass {type(value).__name__} to the worker")

    return json.dumps(config.model_dump(), default=plain)


def _read_outcome(path: Path) -> CycleOutcome | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return CycleOutcome(**data)
    except (OSError, ValueError, TypeError):
        return None


async def _echoing(
    process: asyncio.subprocess.Process, path: Path, start: int, echo: Callable[[str], object]
) -> int:
    """Wait for `process`, passing each whole line appended to `path` after `start` to `echo`."""
    exited = asyncio.ensure_future(process.wait())
    try:
        handle = await asyncio.to_thread(open, path, "rb")  # a local log: its reads take no time
        with handle:
            handle.seek(start)
            pending = b""
            while True:
                await asyncio.wait({exited}, timeout=0.5)
                pending += handle.read()
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    echo(line.decode(errors="replace"))
                if exited.done():
                    if pending:
                        echo(pending.decode(errors="replace"))
                    return exited.result()
    finally:
        exited.cancel()


def _tail(path: Path, start: int) -> str:
    with open(path, "rb") as handle:
        handle.seek(start)
        lines = handle.read().decode(errors="replace").splitlines()
    return " | ".join(line.strip() for line in lines[-TAIL_LINES:] if line.strip()) or "(it logged nothing)"
