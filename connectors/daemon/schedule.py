"""The daemon's schedule: jobs on cron expressions, in local time.

    minute hour day-of-month month day-of-week      "0 3 * * *" 03:00 daily, "0 4 * * 0" Sundays 04:00

A field is `*`, a number, a range `a-b`, a step `*/n` or `a-b/n`, or a comma list of those;
months and weekdays may be named (jan..dec, sun..sat); weekday 0 and 7 are both Sunday. As in
Vixie cron, when day-of-month and day-of-week are both restricted, a day matching either one
counts. Also `@hourly`, `@daily` (`@midnight`), `@weekly`, `@monthly`, `@yearly` (`@annually`).

Times are naive local wall-clock times: a job due in an hour that a DST change skips does not
run that day, and one due in a repeated hour runs once. Runs missed while the daemon was down
are not made up; the next due time counts. A job never overlaps itself: if it still runs when
it is due again, that run is skipped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

log = logging.getLogger("temper.schedule")

MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
ALIASES = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
SEARCH_YEARS = 9  # Feb 29 falls at most 8 years apart (1896 -> 1904)


class CronError(ValueError):
    """A cron expression that cannot be used; the message says which field and why."""


@dataclass(frozen=True)
class Cron:
    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    days_restricted: bool
    weekdays_restricted: bool

    @classmethod
    def parse(cls, text: str) -> Cron:
        fields = ALIASES.get(text.strip().lower(), text).split()
        if len(fields) != 5:
            raise CronError(
                f"{text!r}: a cron expression has 5 fields (minute hour day-of-month month day-of-week), "
                f"like '0 3 * * *'; got {len(fields)}"
            )
        minute, hour, day, month, weekday = fields
        cron = cls(
            text=text.strip(),
            minutes=_field(minute, "minute", 0, 59),
            hours=_field(hour, "hour", 0, 23),
            days=_field(day, "day of month", 1, 31),
            months=_field(month, "month", 1, 12, MONTHS, first=1),
            weekdays=frozenset(d % 7 for d in _field(weekday, "day of week", 0, 7, WEEKDAYS)),
            days_restricted=not day.startswith("*"),
            weekdays_restricted=not weekday.startswith("*"),
        )
        cron.next_after(datetime(2000, 1, 1))  # "0 0 31 2 *" never comes: say so now, not at 3 am
        return cron

    def matches(self, moment: datetime) -> bool:
        return (
            moment.minute in self.minutes
            and moment.hour in self.hours
            and moment.month in self.months
            and self._day_matches(moment)
        )

    def _day_matches(self, moment: datetime) -> bool:
        day = moment.day in self.days
        weekday = moment.isoweekday() % 7 in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return day or weekday
        return day and weekday

    def next_after(self, moment: datetime) -> datetime:
        """The first matching minute strictly after `moment`."""
        t = moment.replace(second=0, microsecond=0) + timedelta(minutes=1)
        limit = t + timedelta(days=366 * SEARCH_YEARS)
        while t < limit:
            if t.month not in self.months:
                t = (t.replace(day=1) + timedelta(days=32)).replace(day=1, hour=0, minute=0)
            elif not self._day_matches(t):
                t = t.replace(hour=0, minute=0) + timedelta(days=1)
            elif t.hour not in self.hours:
                t = t.replace(minute=0) + timedelta(hours=1)
            elif t.minute not in self.minutes:
                t += timedelta(minutes=1)
            else:
                return t
        raise CronError(f"{self.text!r} never comes (no such date)")


def _field(
    text: str, name: str, low: int, high: int, names: tuple[str, ...] = (), first: int = 0
) -> frozenset[int]:
    def number(part: str) -> int:
        lowered = part.lower()
        if lowered in names:
            return names.index(lowered) + first
        if not part.isdigit() or not low <= int(part) <= high:
            named = f" or a name ({names[0]}..{names[-1]})" if names else ""
            raise CronError(f"{name} {part!r}: must be a number from {low} to {high}{named}")
        return int(part)

    values: set[int] = set()
    for part in text.split(","):
        body, slash, step_text = part.partition("/")
        if slash and (not step_text.isdigit() or int(step_text) == 0):
            raise CronError(f"{name} {part!r}: the step after '/' must be a whole number above 0")
        if body == "*":
            start, end = low, high
        elif "-" in body:
            start_text, end_text = body.split("-", 1)
            start, end = number(start_text), number(end_text)
        else:
            start = number(body)
            end = high if slash else start
        if start > end:
            raise CronError(f"{name} {part!r}: the range runs backwards")
        values.update(range(start, end + 1, int(step_text) if slash else 1))
    return frozenset(values)


@dataclass(frozen=True)
class Job:
    """A scheduled piece of work; `run` returns one line saying what it did."""

    name: str
    cron: Cron
    run: Callable[[], Awaitable[str]]


@dataclass(frozen=True)
class JobRun:
    started_at: float
    finished_at: float | None = None
    ok: bool | None = None
    detail: str = ""


class Scheduler:
    """Runs each job when its cron expression comes due; `history` holds the last run of each
    (seeded from the previous daemon's status so `temper status` survives restarts)."""

    def __init__(
        self,
        jobs: Iterable[Job],
        history: dict[str, JobRun] | None = None,
        *,
        clock: Callable[[], datetime] = datetime.now,
        tick_s: float = 30.0,
    ) -> None:
        self.jobs = {job.name: job for job in jobs}
        self.history = dict(history or {})
        self.clock = clock
        self.tick_s = tick_s
        self.next_runs: dict[str, datetime] = {}
        self._running: dict[str, asyncio.Task[JobRun]] = {}

    async def run(self) -> None:
        """Until cancelled: wait for the next due job, start it, repeat."""
        now = self.clock()
        self.next_runs = {name: job.cron.next_after(now) for name, job in self.jobs.items()}
        while True:
            now = self.clock()
            for name, due in self.next_runs.items():
                if due <= now:
                    self.next_runs[name] = self.jobs[name].cron.next_after(max(now, due))
                    if name in self._running:
                        log.warning("job %s is due but its last run has not finished; skipped", name)
                    else:
                        self.start(name)
            wait = (
                min((due - now).total_seconds() for due in self.next_runs.values())
                if self.next_runs
                else self.tick_s
            )
            await asyncio.sleep(min(max(wait, 0.01), self.tick_s))

    def start(self, name: str) -> asyncio.Task[JobRun]:
        task = asyncio.create_task(self._run(self.jobs[name]), name=f"job {name}")
        self._running[name] = task
        task.add_done_callback(lambda _: self._running.pop(name, None))
        return task

    async def _run(self, job: Job) -> JobRun:
        started = time.time()
        self.history[job.name] = JobRun(started)
        try:
            detail = await job.run()
            finished = JobRun(started, time.time(), True, detail)
        except Exception as error:  # a failing job is reported and retried at its next time
            log.exception("job %s failed", job.name)
            finished = JobRun(started, time.time(), False, f"{type(error).__name__}: {error}")
        self.history[job.name] = finished
        return finished

    async def stop(self, timeout_s: float) -> None:
        """Let running jobs finish for up to `timeout_s`, then cancel them."""
        running = list(self._running.values())
        if running:
            _, late = await asyncio.wait(running, timeout=timeout_s)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
