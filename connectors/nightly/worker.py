"""The learning cycle as a worker: `python -m connectors.nightly.worker RESULT_FILE`, started by
the daemon's nightly job (connectors/nightly/runner.py), and `temper learn --now` in process.

    stdin:   the resolved config as JSON (secrets included: they never touch the disk or the
             environment; the parent resolved it the way every `temper` command does)
    stdout:  log lines (the parent sends them to `<data_dir>/learner/worker.log`)
    writes:  `<data_dir>/learner/progress.json` as the cycle goes (connectors/nightly/progress.py),
             then RESULT_FILE: {"ok", "phase", "report", "summary", "promoted", "error"}
    exit:    0 done or cancelled, 1 the cycle failed, 2 it could not start (setup, busy)

Runs niced (`[learner] nice`) with `[learner] torch_threads`, so the daemon's replies keep
their CPU. SIGTERM (`temper learn --cancel`, the daemon shutting down) or the daemon's death
stops the cycle at its next iteration boundary, after that step's checkpoint: the next run on
the same day resumes the same cycle directory (connectors/learning.py). One cycle at a time per
data dir (`learner/worker.lock`).
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from connectors.nightly.progress import eta, learner_dir, own_cmdline, progress_path, write_progress

if TYPE_CHECKING:
    from connectors.config import Config
    from learner.followers import Followers

LOCK_FILE = "worker.lock"
EXIT_FAILED = 1
EXIT_NOT_STARTED = 2


class CycleCancelled(Exception):
    """The cycle was asked to stop; raised at an iteration boundary."""


class CycleBusy(Exception):
    """Another learning cycle runs on this data dir."""


@dataclass(frozen=True)
class CycleOutcome:
    ok: bool
    phase: str  # done | cancelled | failed
    report: str = ""
    summary: str = ""
    promoted: str | None = None
    error: str | None = None


class CycleWatch:
    """Turns the cycle's progress events into progress.json (written from the first event on),
    and stops the cycle at an iteration boundary once `cancel` was called (or the parent process
    is gone)."""

    def __init__(self, path: Path, *, parent_pid: int | None = None, clock: Callable[[], float] = time.time):
        self.path = path
        self.parent_pid = parent_pid
        self.clock = clock
        self.cancel_reason: str | None = None
        now = clock()
        self.state: dict[str, Any] = {
            "pid": os.getpid(),
            "cmdline": own_cmdline(),
            "phase": "collect",
            "iteration": 0,
            "iterations": None,
            "reward": None,
            "started_at": now,
            "updated_at": now,
            "deadline": None,
            "eta": None,
            "summary": None,
            "promoted": None,
            "error": None,
        }
        self._began = now  # this run's start: loading and replaying count towards the mean iteration
        self._first_iteration: int | None = None  # where this run's training began (past 0: resumed)

    def cancel(self, reason: str) -> None:
        self.cancel_reason = self.cancel_reason or reason

    def __call__(self, event: dict[str, Any]) -> None:
        now = self.clock()
        self.state.update(event, updated_at=now)
        finished_iteration = event.get("phase") == "train" and "iteration" in event
        if finished_iteration:
            self._train(now, int(event["iteration"]))
        write_progress(self.path, self.state)
        if self.parent_pid is not None and _gone(self.parent_pid):
            self.cancel("the daemon that started the cycle is gone")
        if self.cancel_reason is not None and finished_iteration:
            raise CycleCancelled(self.cancel_reason)

    def _train(self, now: float, iteration: int) -> None:
        if self._first_iteration is None:
            self._first_iteration = iteration - 1
        iterations = self.state.get("iterations") or iteration
        deadline = self.state.get("deadline")
        self.state["eta"] = eta(
            now, self._began, iteration - self._first_iteration, iterations - iteration, deadline
        )
        if iteration >= iterations or (deadline is not None and now > deadline):
            self.state["phase"] = "gate"  # no iteration starts after this one: run_cycle gates next

    def finish(self, outcome: CycleOutcome) -> None:
        self.state.update(
            phase=outcome.phase,
            updated_at=self.clock(),
            summary=outcome.summary or self.state.get("summary"),
            promoted=outcome.promoted,
            error=outcome.error,
            eta=None,
        )
        write_progress(self.path, self.state)


async def run_watched_cycle(
    config: Config,
    *,
    say: Callable[[str], object],
    minutes: float,
    iterations: int = 500,
    per_family: int = 8,
    parent_pid: int | None = None,
    followers: Followers | None = None,
) -> CycleOutcome:
    """One learning cycle with its progress file, its lock and cancellation by SIGTERM.

    A cancelled cycle returns (phase "cancelled"); a failing one writes phase "failed" and
    raises. `LearnerSetupError` and `CycleBusy` raise before anything is written."""
    from connectors.learning import run_learning_cycle

    with _cycle_lock(learner_dir(config.data_dir) / LOCK_FILE):
        watch = CycleWatch(progress_path(config.data_dir), parent_pid=parent_pid)
        with _cancel_on_sigterm(watch):
            try:
                report = await run_learning_cycle(
                    config,
                    minutes=minutes,
                    say=say,
                    iterations=iterations,
                    per_family=per_family,
                    progress=watch,
                    followers=followers,
                )
            except CycleCancelled as cancelled:
                outcome = CycleOutcome(False, "cancelled", error=str(cancelled))
                say(
                    f"cancelled at iteration {watch.state['iteration']}: {cancelled}; the next run resumes here"
                )
                watch.finish(outcome)
                return outcome
            except BaseException as error:
                watch.finish(CycleOutcome(False, "failed", error=f"{type(error).__name__}: {error}"))
                raise
    summary = watch.state.get("summary") or (report.splitlines() or [""])[0]
    outcome = CycleOutcome(True, "done", report=report, summary=summary, promoted=watch.state.get("promoted"))
    watch.finish(outcome)
    return outcome


def _gone(parent_pid: int) -> bool:
    """The process that started the cycle has exited: it is not this process's parent (under
    `accelerate launch` the launcher is) and no process has its pid."""
    if os.getppid() == parent_pid:
        return False
    try:
        os.kill(parent_pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return True  # another user's process has the pid now: the daemon (ours) is gone
    return False


@contextmanager
def _cycle_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise CycleBusy(
                f"a learning cycle already runs on {path.parent.parent} (pid {handle.read().strip() or '?'}); "
                "`temper status` shows it, `temper learn --cancel` stops it"
            ) from None
        handle.truncate(0)
        handle.write(str(os.getpid()))
        handle.flush()
        yield  # closing the file releases the lock


@contextmanager
def _cancel_on_sigterm(watch: CycleWatch) -> Iterator[None]:
    previous = signal.signal(signal.SIGTERM, lambda _sig, _frame: watch.cancel("asked to stop (SIGTERM)"))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def worker_environment(environ: dict[str, str] | os._Environ[str], torch_threads: int) -> dict[str, str]:
    """The worker's environment: the basics a Python process and its libraries need, its thread
    counts, and nothing else (secrets arrive with the config on stdin)."""
    kept = {name: value for name, value in environ.items() if name in PASSED_ON or name.startswith("LC_")}
    threads = str(torch_threads)
    return {
        **kept,
        "OMP_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
        "TOKENIZERS_PARALLELISM": "false",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONUNBUFFERED": "1",
    }


PASSED_ON = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV",
        "HF_HOME", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
        "DOCKER_HOST", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY",  # the docker sandbox's engine
    }
)  # fmt: skip


def main(argv: list[str] | None = None, followers: Followers | None = None) -> int:
    """`followers`: the other ranks, this process being rank 0 (connectors/nightly/ranks.py)."""
    arguments = sys.argv[1:] if argv is None else argv
    if len(arguments) != 5:
        print(
            "usage: python -m connectors.nightly.worker RESULT_FILE MINUTES ITERATIONS PER_FAMILY PARENT_PID"
        )
        return EXIT_NOT_STARTED
    result_file = Path(arguments[0])
    minutes, iterations, per_family, parent = (
        float(arguments[1]), int(arguments[2]), int(arguments[3]), int(arguments[4])
    )  # fmt: skip
    from connectors.config import Config
    from connectors.learning import LearnerSetupError

    config = Config.model_validate_json(sys.stdin.read())
    os.nice(config.learner.nice)

    def say(line: str) -> None:
        print(time.strftime("%H:%M:%S"), line, flush=True)

    say(
        f"learning cycle worker pid {os.getpid()}: nice {os.nice(0)}, {config.learner.torch_threads} torch thread(s)"
    )
    try:
        outcome = asyncio.run(
            run_watched_cycle(
                config,
                say=say,
                minutes=minutes,
                iterations=iterations,
                per_family=per_family,
                parent_pid=parent,
                followers=followers,
            )
        )
    except (LearnerSetupError, CycleBusy) as error:
        say(f"not started: {error}")
        _write_result(result_file, CycleOutcome(False, "failed", error=str(error)))
        return EXIT_NOT_STARTED
    except Exception as error:
        traceback.print_exc(file=sys.stdout)
        _write_result(result_file, CycleOutcome(False, "failed", error=f"{type(error).__name__}: {error}"))
        return EXIT_FAILED
    say(outcome.summary if outcome.ok else f"{outcome.phase}: {outcome.error}")
    _write_result(result_file, outcome)
    return 0


def _write_result(path: Path, outcome: CycleOutcome) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(json.dumps(asdict(outcome)), encoding="utf-8")
    os.replace(temporary, path)


if __name__ == "__main__":
    sys.exit(main())
