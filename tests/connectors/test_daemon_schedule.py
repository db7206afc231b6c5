"""The daemon's schedule: cron expressions (parsing, matching, the next time) and the scheduler
running due jobs on a clock the test moves."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from connectors.daemon.schedule import Cron, CronError, Job, Scheduler

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


@pytest.mark.parametrize(
    ("expression", "after", "expected"),
    [
        ("0 3 * * *", "2026-11-30 02:59:30", "2026-11-30 03:00"),
        ("0 3 * * *", "2026-11-30 03:00:00", "2026-12-01 03:00"),  # strictly after
        ("0 4 * * 0", "2026-11-30 12:00", "2026-12-06 04:00"),  # Sundays; 2026-11-30 is a Monday
        ("0 4 * * 7", "2026-11-30 12:00", "2026-12-06 04:00"),  # 7 is Sunday too
        ("0 4 * * sun", "2026-11-30 12:00", "2026-12-06 04:00"),
        ("*/15 * * * *", "2026-11-30 10:07", "2026-11-30 10:15"),
        ("5-10/5 8 * * mon-fri", "2026-12-04 08:06", "2026-12-04 08:10"),
        ("5-10/5 8 * * mon-fri", "2026-12-04 08:10", "2026-12-07 08:05"),  # Friday -> Monday
        ("0 0 1 jan,jul *", "2026-02-01 00:00", "2026-07-01 00:00"),
        ("0 0 29 2 *", "2026-03-01 00:00", "2028-02-29 00:00"),
        ("0 12 13 * fri", "2026-11-30 00:00", "2026-12-04 12:00"),  # day or weekday, as cron does
        ("@weekly", "2026-11-30 00:00", "2026-12-06 00:00"),
        ("@hourly", "2026-11-30 23:30", "2026-12-01 00:00"),
    ],
)
def test_next_after(expression: str, after: str, expected: str) -> None:
    assert Cron.parse(expression).next_after(at(after)) == at(expected)


def test_matches() -> None:
    nightly = Cron.parse("0 3 * * *")
    assert nightly.matches(at("2026-11-30 03:00:59"))
    assert not nightly.matches(at("2026-11-30 03:01"))


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("0 3 * *", "5 fields"),
        ("60 * * * *", "minute '60': must be a number from 0 to 59"),
        ("* 24 * * *", "hour '24'"),
        ("* * 0 * *", "day of month '0'"),
        ("* * * 13 *", "month '13'"),
        ("* * * foo *", "or a name (jan..dec)"),
        ("* * * * 8", "day of week '8'"),
        ("*/0 * * * *", "step after '/'"),
        ("5-1 * * * *", "runs backwards"),
        ("0 0 31 2 *", "never comes"),
    ],
)
def test_bad_expressions_say_what_is_wrong(expression: str, says: str) -> None:
    with pytest.raises(CronError, match=says.replace("(", r"\(").replace(")", r"\)")):
        Cron.parse(expression)


async def test_the_scheduler_runs_due_jobs_once_and_records_how_they_went() -> None:
    now = [at("2026-11-30 02:59:50")]
    runs: list[str] = []

    async def learn() -> str:
        runs.append("learn")
        return "1 cycle"

    async def broken() -> str:
        raise RuntimeError("disk full")

    jobs = [Job("learner", Cron.parse("0 3 * * *"), learn), Job("broken", Cron.parse("0 3 * * *"), broken)]
    scheduler = Scheduler(jobs, clock=lambda: now[0], tick_s=0.01)
    task = asyncio.create_task(scheduler.run())
    await asyncio.sleep(0.05)
    assert runs == [] and scheduler.next_runs["learner"] == at("2026-11-30 03:00")
    now[0] = at("2026-11-30 03:00:01")
    await asyncio.sleep(0.1)
    assert runs == ["learn"]  # once, though the clock stays in that minute
    assert scheduler.next_runs["learner"] == at("2026-12-01 03:00")
    task.cancel()
    await scheduler.stop(1.0)
    learned, failed = scheduler.history["learner"], scheduler.history["broken"]
    assert (learned.ok, learned.detail) == (True, "1 cycle")
    assert (failed.ok, failed.detail) == (False, "RuntimeError: disk full")
