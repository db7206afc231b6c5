"""The learning cycle's progress file, `<data_dir>/learner/progress.json`: what `temper status`
shows and what `temper learn --cancel` acts on.

    {"pid": 4242, "cmdline": ["python", "-m", "connectors.nightly.worker", ...],
     "phase": "train", "iteration": 3, "iterations": 500, "reward": 0.41,
     "started_at": ..., "updated_at": ..., "deadline": ..., "eta": ..., "cycle_dir": "...",
     "summary": null, "promoted": null, "error": null}

Phases (learner/night.py): collect (the day's episodes become tasks), distill (the adapter
imitates the planner's successful episodes), train (each iteration replays a batch of tasks and
takes a training step; `iteration` counts the ones finished), gate (training ended: held-out
replays and the gate's decision, then promotion), measure (the competence per kind of task of
the version in service, for routing), and the ends: done, failed, cancelled. A file whose
phase is not an end and whose pid is gone belongs to a cycle that crashed or was killed: it is
*interrupted*, and the next run resumes from its checkpoint.

`eta` is when training should end: the mean time of this run's iterations times those left,
capped by the budget's deadline (after which no iteration starts). Written atomically (a
temporary file renamed over it): a reader never sees half a file. `cmdline` is the writer's
own command line, so a pid reused by an unrelated process is never taken for the worker.
"""

from __future__ import annotations

import json
import os
import signal
import time
from datetime import datetime
from pathlib import Path
from typing import Any

PROGRESS_FILE = "progress.json"
ENDED = frozenset({"done", "failed", "cancelled"})


def learner_dir(data_dir: Path) -> Path:
    return data_dir / "learner"


def progress_path(data_dir: Path) -> Path:
    return learner_dir(data_dir) / PROGRESS_FILE


def write_progress(path: Path, progress: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(json.dumps(progress, indent=1), encoding="utf-8")
    os.replace(temporary, path)


def read_progress(data_dir: Path) -> dict[str, Any] | None:
    try:
        progress = json.loads(progress_path(data_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # never written, being replaced, or damaged: nothing to show
    return progress if isinstance(progress, dict) else None


def own_cmdline() -> list[str]:
    return _cmdline(os.getpid()) or []


def running_pid(progress: dict[str, Any] | None) -> int | None:
    """The pid of the cycle `progress` describes, if that cycle is still running."""
    if not progress or progress.get("phase") in ENDED or not isinstance(progress.get("pid"), int):
        return None
    pid = progress["pid"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return None  # another user's process: not a worker of ours
    found = _cmdline(pid)
    return pid if found is None or found == progress.get("cmdline") else None


def request_cancel(data_dir: Path) -> int | None:
    """SIGTERM to the running cycle (it stops at its next iteration boundary); its pid, or None
    when no cycle runs."""
    pid = running_pid(read_progress(data_dir))
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
    return pid


def eta(
    now: float, first_iteration_started: float, done_this_run: int, left: int, deadline: float | None
) -> float | None:
    """When training should end: the mean iteration time times the iterations left, capped by
    the deadline (an iteration started just before it still runs to its end)."""
    if done_this_run <= 0:
        return None
    mean = (now - first_iteration_started) / done_this_run
    estimate = now + mean * max(left, 0)
    return estimate if deadline is None else min(estimate, deadline + mean)


def render_progress(progress: dict[str, Any] | None, now: float | None = None) -> str | None:
    """The `learner:` line of `temper status` about the cycle, or None when none ever ran."""
    if not progress:
        return None
    now = time.time() if now is None else now
    phase = progress.get("phase", "?")
    if phase == "done":
        promoted = progress.get("promoted")
        outcome = f"promoted {promoted}" if promoted else "not promoted"
        summary = f": {progress['summary']}" if progress.get("summary") else ""
        return f"last cycle {_clock(progress.get('updated_at'))} done, {outcome}{summary}"
    if phase == "cancelled":
        return (
            f"last cycle {_clock(progress.get('updated_at'))} cancelled at {_steps(progress)}; "
            "the next run resumes from its checkpoint"
        )
    if phase == "failed":
        return f"last cycle {_clock(progress.get('updated_at'))} FAILED: {progress.get('error') or '?'}"
    if running_pid(progress) is None:
        return (
            f"last cycle interrupted ({phase} at {_steps(progress)}, {_clock(progress.get('updated_at'))}); "
            "the next run resumes from its checkpoint"
        )
    parts = [f"cycle running (pid {progress['pid']}): {phase}", _steps(progress)]
    if isinstance(progress.get("reward"), int | float):
        parts.append(f"train reward {progress['reward']:.2f}")
    ends = progress.get("eta")
    if phase == "train" and isinstance(ends, int | float):
        parts.append(f"training ends ~{_clock(ends, '%H:%M')} (in {max(0, int(ends - now)) // 60} min)")
    return ", ".join(parts)


def _steps(progress: dict[str, Any]) -> str:
    return f"iteration {progress.get('iteration', 0)}/{progress.get('iterations', '?')}"


def _clock(timestamp: object, layout: str = "%Y-%m-%d %H:%M") -> str:
    if not isinstance(timestamp, int | float):
        return "?"
    return datetime.fromtimestamp(timestamp).strftime(layout)


def _cmdline(pid: int) -> list[str] | None:
    """The process's command line, or None where /proc cannot tell (not Linux)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return None if not Path("/proc/self").exists() else []
    except OSError:
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]
