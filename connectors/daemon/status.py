"""The daemon's report: `daemon.json` in the data dir, rewritten every few seconds and whenever
a channel changes state; `temper status` reads it, and the queue straight from the database
(live even while the daemon is down). It also carries the schedule's last runs across restarts.

    {"pid": 123, "state": "running", "started_at": ..., "updated_at": ...,
     "channels": [{"name": "telegram", "state": "running", "since": ..., "restarts": 0, "last_error": null}],
     "queue": {"pending": 0, "failed": 0, "in_flight": 0, "approvals_open": 0},
     "jobs": {"memory-maintenance": {"schedule": "0 4 * * 0", "next_run": "2026-11-08T04:00:00",
              "last": {"started_at": ..., "finished_at": ..., "ok": true, "detail": "..."}}},
     "executor_version": null,
     "learner": {"phase": "train", "iteration": 3, "iterations": 500, ...}}   # connectors/nightly/progress.py

Written atomically (a temporary file renamed over it): a reader never sees half a report.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from connectors.daemon.schedule import JobRun
from connectors.daemon.supervisor import ChannelState
from connectors.nightly.progress import render_progress

STATUS_FILE = "daemon.json"
LEARNER_JOB = "learner"


@dataclass
class DaemonReport:
    pid: int
    state: str  # starting | running | draining | stopped
    started_at: float
    updated_at: float
    channels: list[ChannelState] = field(default_factory=list)
    queue: dict[str, int] = field(default_factory=dict)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    executor_version: str | None = None
    learner: dict[str, Any] | None = None  # the learning cycle's progress file, as last read


def write_report(path: Path, report: DaemonReport) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(json.dumps(asdict(report), indent=1), encoding="utf-8")
    os.replace(temporary, path)


def read_report(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return None  # being replaced, or damaged: as good as no report


def job_history(report: dict[str, Any] | None) -> dict[str, JobRun]:
    """The last run of each job, as the previous daemon reported it."""
    runs: dict[str, JobRun] = {}
    for name, job in ((report or {}).get("jobs") or {}).items():
        last = job.get("last") if isinstance(job, dict) else None
        if isinstance(last, dict) and isinstance(last.get("finished_at"), int | float):  # cut short: no run
            runs[name] = JobRun(
                last["started_at"], last.get("finished_at"), last.get("ok"), str(last.get("detail", ""))
            )
    return runs


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it exists
    return True


def render(
    report: dict[str, Any] | None,
    pending: int,
    failed: int,
    now: float | None = None,
    learner: dict[str, Any] | None = None,
) -> list[str]:
    """`temper status` lines: the daemon, each channel, the queue, the schedule, the learning
    cycle (`learner`: its progress file, read live; else as the report last saw it), the executor."""
    now = time.time() if now is None else now
    if report is None:
        lines = ["daemon:    not running (it has never run with this data dir)"]
    elif report.get("state") != "stopped" and is_alive(int(report.get("pid", 0))):
        lines = [
            f"daemon:    {report['state']} (pid {report['pid']}, up {_ago(now - report['started_at'])}, "
            f"report {_ago(now - report['updated_at'])} old)"
        ]
    else:
        lines = [f"daemon:    not running (last seen {_when(report.get('updated_at'))})"]
    for channel in (report or {}).get("channels", []):
        error = (
            f": {channel['last_error']}"
            if channel.get("last_error") and channel["state"] != "running"
            else ""
        )
        lines.append(
            f"{channel['name'] + ':':<10} {channel['state']}{error} "
            f"(since {_when(channel['since'])}, restarts {channel['restarts']})"
        )
    queue = (report or {}).get("queue", {})
    lines.append(
        f"queue:     {pending} pending, {failed} failed"
        + (
            f", {queue.get('in_flight', 0)} in flight, {queue.get('approvals_open', 0)} approvals open"
            if queue
            else ""
        )
    )
    jobs = (report or {}).get("jobs", {})
    for name, job in jobs.items():
        lines.append(f"{name + ':':<10} {_job_line(job)}")
    if LEARNER_JOB not in jobs:
        lines.append("learner:   no learner installed (no nightly cycle yet)")
    cycle = render_progress(learner or (report or {}).get("learner"), now)
    if cycle is not None:
        lines.append(f"cycle:     {cycle}")
    version = (report or {}).get("executor_version")
    lines.append(f"executor:  {version or 'none (no executor model promoted yet)'}")
    return lines


def _job_line(job: dict[str, Any]) -> str:
    last = job.get("last")
    if not last:
        done = "never run"
    elif last.get("ok") is None:
        done = f"running since {_when(last['started_at'])}"
    else:
        outcome = "ok" if last["ok"] else "FAILED"
        done = f"last {_when(last['started_at'])} {outcome}: {last.get('detail', '')}"
    upcoming = f"; next {job['next_run'].replace('T', ' ')[:16]}" if job.get("next_run") else ""
    return f"{done}{upcoming} ({job.get('schedule', '?')})"


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "never"
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 86400:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{seconds // 86400} d {seconds % 86400 // 3600} h"
