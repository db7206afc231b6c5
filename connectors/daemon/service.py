"""`temper daemon`: the chat connectors, the dispatcher and the schedule, run as one service.

    serve:  startup -> main_loop -> shutdown

- startup: take the data dir's daemon lock (one daemon per database: the inbox is handed out
  by this process alone), build the agent, start a supervisor per enabled channel
  (connectors/daemon/supervisor.py), the dispatcher (connectors/daemon/dispatch.py) and the schedule
  (connectors/daemon/schedule.py); tell systemd we are ready.
- main_loop: until `should_exit`, refresh the report (`daemon.json`, read by `temper status`),
  and every `version_poll_s` make the executor serve the version `<data_dir>/executor/current`
  names (a promotion, `temper executor rollback`) without a restart; turns in flight finish on
  the version they started with.
- shutdown: stop handing out messages; let the turns in flight finish, for at most
  `drain_timeout_s`; then cancel what is left (those items stay in the inbox and resume at the
  next start), stop the channels and the schedule, close the agent and the store.

The first SIGTERM or SIGINT sets `should_exit` (graceful); a second sets `force_exit`, which
cuts the drain short. Deliveries that arrive while draining are still written to the inbox.

Channels come from factories, one per platform name: `factory(config) -> Channel`
(connectors/daemon/channels.py has the built-in ones, for the platforms the config enables).
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import signal
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import IO, Any

from connectors.assembly import Assembled, build_agent, follow_current_version
from connectors.config import Config
from connectors.daemon.access import Access, PairingPolicy, allowlists
from connectors.daemon.channels import ChannelFactory, enabled_channels
from connectors.daemon.dispatch import Dispatcher, DispatchSettings
from connectors.daemon.inbox import Inbox
from connectors.daemon.nightly import announce_to_chats, learner_job
from connectors.daemon.schedule import Cron, Job, Scheduler
from connectors.daemon.status import STATUS_FILE, DaemonReport, job_history, read_report, write_report
from connectors.daemon.supervisor import ChannelSupervisor, RestartPolicy
from connectors.daemon.systemd import notify
from connectors.nightly.progress import read_progress
from connectors.nightly.runner import NightlyRun, NightlySettings
from memory import BASE_VERSION, MemoryStore
from runtime.executor import ExecutorError

log = logging.getLogger("temper.daemon")

LOCK_FILE = "daemon.lock"
DAY_S = 86_400.0


class DaemonError(Exception):
    """The daemon cannot start: another runs on this data dir, or the setup is unusable."""


@dataclass(frozen=True)
class ScheduleSettings:
    maintenance: str = "0 4 * * 0"  # memory maintenance, Sundays 04:00
    index_merge: str = "17 * * * *"  # a bounded merge of the search indexes' segments, hourly
    prune: str = "30 4 * * *"  # forget finished inbox items after `retention_days`
    learner: str = "0 3 * * *"  # the learner's nightly cycle, when a learner provides one
    retention_days: float = 30.0


@dataclass(frozen=True)
class DaemonSettings:
    drain_timeout_s: float = 30.0
    status_interval_s: float = 5.0
    version_poll_s: float = 2.0  # how often the executor version pointer is read
    dispatch: DispatchSettings = field(default_factory=DispatchSettings)
    restart: RestartPolicy = field(default_factory=RestartPolicy)
    pairing: PairingPolicy = field(default_factory=PairingPolicy)
    schedule: ScheduleSettings = field(default_factory=ScheduleSettings)
    learner: NightlySettings = field(default_factory=NightlySettings)

    @classmethod
    def from_config(
        cls, config: Config, *, drain_timeout_s: float | None = None, concurrency: int | None = None
    ) -> DaemonSettings:
        """The `[daemon]` table; `drain_timeout_s` and `concurrency` (CLI flags) win when given."""
        daemon = config.daemon
        return cls(
            drain_timeout_s=daemon.drain_timeout_s if drain_timeout_s is None else drain_timeout_s,
            dispatch=DispatchSettings(
                concurrency=daemon.concurrency if concurrency is None else concurrency,
                approval_timeout_s=daemon.approval_timeout_s,
                link_code_ttl_s=config.users.link_code_ttl_s,
                link_approval=config.users.link_approval,
            ),
            pairing=PairingPolicy(ttl_s=daemon.pairing_code_ttl_s),
            schedule=ScheduleSettings(
                maintenance=daemon.maintenance_schedule,
                index_merge=daemon.index_merge_schedule,
                prune=daemon.inbox_prune_schedule,
                learner=daemon.learner_schedule,
                retention_days=daemon.inbox_retention_days,
            ),
        )


class Daemon:
    def __init__(
        self,
        config: Config,
        *,
        channels: Mapping[str, ChannelFactory] | None = None,
        jobs: Iterable[Job] = (),
        settings: DaemonSettings | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.channel_factories = dict(enabled_channels(config) if channels is None else channels)
        self.extra_jobs = list(jobs)
        self.settings = settings or DaemonSettings.from_config(config)
        self.environ = os.environ if environ is None else environ
        self.should_exit = False
        self.force_exit = False
        self.status_path = config.data_dir / STATUS_FILE
        self._forced = asyncio.Event()
        self._state = "starting"
        self._started_at = time.time()
        self._tasks: list[asyncio.Task[None]] = []
        self._lock: IO[str] | None = None
        self._assembled: Assembled | None = None
        self.supervisors: dict[str, ChannelSupervisor] = {}
        self.dispatcher: Dispatcher | None = None
        self.scheduler: Scheduler | None = None
        self.inbox: Inbox | None = None
        self._version_error: str | None = None  # the last executor version failure logged
        self.learner: NightlyRun | None = None  # the nightly cycle's worker, when there is a learner

    # --- lifecycle --------------------------------------------------------------------------

    async def serve(self) -> int:
        """Run until a signal (or `should_exit`); 0 after a graceful stop, 1 after a forced one."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.handle_exit, sig)
        try:
            await self.startup()
            await self.main_loop()
        finally:
            try:
                await self.shutdown()
            finally:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(sig)
        return 1 if self.force_exit else 0

    def handle_exit(self, sig: int | None = None) -> None:
        log.info(
            "%s: %s",
            signal.Signals(sig).name if sig else "exit",
            "stopping now" if self.should_exit else "draining",
        )
        if self.should_exit:
            self.force_exit = True
            self._forced.set()
        self.should_exit = True

    async def startup(self) -> None:
        self.config.data_dir.mkdir(parents=True, exist_ok=True)
        self._lock = _take_lock(self.config.data_dir / LOCK_FILE)
        self._assembled = build_agent(self.config, self.environ, stream=False)  # nobody watches text arrive
        store = self._assembled.store
        self.inbox = Inbox(store, self._wake)
        for name, factory in self.channel_factories.items():
            self.supervisors[name] = ChannelSupervisor(
                name, partial(factory, self.config), self.inbox.deliver, self.settings.restart, self.report
            )
        access = Access(store, allowlists(self.config), self.settings.pairing)
        self.dispatcher = Dispatcher(
            store, self._assembled.agent, access, self.supervisors, self.settings.dispatch
        )
        history = job_history(read_report(self.status_path))
        self.scheduler = Scheduler([*self.default_jobs(store), *self.extra_jobs], history)
        for supervisor in self.supervisors.values():
            supervisor.start()
        self._tasks = [
            asyncio.create_task(self.dispatcher.run(), name="dispatcher"),
            asyncio.create_task(self.scheduler.run(), name="schedule"),
        ]
        if not self.supervisors:
            log.warning(
                "no chat channel is enabled ([telegram] or [slack] enabled = true): running the schedule only"
            )
        self._state = "running"
        self.report()
        notify("READY=1")
        log.info("temper daemon running: channels %s", ", ".join(self.supervisors) or "none")

    async def main_loop(self) -> None:
        next_report = time.monotonic() + self.settings.status_interval_s
        next_version = time.monotonic()  # at once: a server may not have the current version yet
        while not self.should_exit:
            await asyncio.sleep(0.1)
            for task in self._tasks:
                if task.done() and not task.cancelled() and task.exception() is not None:
                    raise DaemonError(f"the {task.get_name()} stopped: {task.exception()!r}")
            if time.monotonic() >= next_version:
                if await self.follow_executor_version():
                    next_report = 0.0  # show the new version now
                next_version = time.monotonic() + self.settings.version_poll_s
            if time.monotonic() >= next_report:
                self.report()
                next_report = time.monotonic() + self.settings.status_interval_s

    async def follow_executor_version(self) -> bool:
        """Serve the executor version the pointer names, if it changed; True when it switched.
        A version that cannot be read or loaded is logged once, and the old one keeps serving."""
        if self._assembled is None:
            return False
        try:
            switched = await follow_current_version(self.config, self._assembled.terminal)
        except (RuntimeError, ExecutorError, OSError) as error:  # VersionError is a RuntimeError
            if str(error) != self._version_error:
                log.warning("the executor keeps serving %s: %s", self._executor_version(), error)
            self._version_error = str(error)
            return False
        self._version_error = None
        if switched:
            log.info("the executor now serves %s", self._executor_version())
        return switched

    def _executor_version(self) -> str | None:
        terminal = None if self._assembled is None else self._assembled.terminal
        return None if terminal is None or terminal.switch is None else terminal.version or BASE_VERSION

    async def shutdown(self) -> None:
        notify("STOPPING=1")
        self._state = "draining"
        learner_stopped = (  # it stops at its next iteration boundary while the turns drain, or is killed
            asyncio.create_task(self.learner.stop(0 if self.force_exit else self.settings.drain_timeout_s))
            if self.learner is not None
            else None
        )
        if self.dispatcher is not None:
            self.report()
            left = await self.dispatcher.drain(self.settings.drain_timeout_s, self._forced)
            if left:
                log.warning("%d item(s) still in flight were stopped; they resume at the next start", left)
        if learner_stopped is not None:
            await learner_stopped
        log.info("stopping the channels and the schedule")
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.scheduler is not None:
            await self.scheduler.stop(0 if self.force_exit else 5.0)
        await asyncio.gather(*(supervisor.stop() for supervisor in self.supervisors.values()))
        self._state = "stopped"
        if self._assembled is not None:
            self.report()
            await self._close_agent(self._assembled)
        if self._lock is not None:
            self._lock.close()  # releases the lock
            self._lock = None

    async def _close_agent(self, assembled: Assembled) -> None:
        try:
            await asyncio.wait_for(assembled.agent.close(), None if not self.force_exit else 1.0)
        except TimeoutError:
            log.warning("after-reply work was cut short by the forced exit")
        finally:
            assembled.store.close()

    # --- the pieces -----------------------------------------------------------------------

    def _wake(self, kind: str) -> None:
        if self.dispatcher is not None:
            self.dispatcher.wake(quick=kind != "message")

    def default_jobs(self, store: MemoryStore) -> list[Job]:
        """Memory maintenance, the hourly index merge, inbox pruning, and the learner's nightly
        cycle if it has one."""
        schedule = self.settings.schedule

        async def maintain() -> str:
            timings = await asyncio.to_thread(store.maintain)
            return f"{len(timings)} steps in {sum(timings.values()):.2f} s"

        async def prune() -> str:
            retention_s = schedule.retention_days * DAY_S
            with store.transaction():  # one logical write: finished items and old pairing codes
                store.access.prune(retention_s)
                store.links.prune(retention_s)
                removed = store.inbox.prune(retention_s)
            return f"{removed} finished inbox items older than {schedule.retention_days:g} days removed"

        async def merge() -> str:
            left = await asyncio.to_thread(store.merge_segments)
            return "segments left: " + ", ".join(f"{index} {count}" for index, count in left.items())

        jobs = [Job("memory-maintenance", Cron.parse(schedule.maintenance), maintain)]
        jobs.append(Job("index-merge", Cron.parse(schedule.index_merge), merge))
        jobs.append(Job("inbox-prune", Cron.parse(schedule.prune), prune))
        self.learner = NightlyRun(self.config, self.settings.learner)
        learner = learner_job(self.config, Cron.parse(schedule.learner), self.learner, self.announce)
        return jobs + ([learner] if learner is not None else [])

    async def announce(self, text: str) -> None:
        """Send `text` (the learner's report) to the `[learner] report_to` chats."""
        await announce_to_chats(self.supervisors, self.config.learner.report_to, text)

    def report(self) -> None:
        """Write `daemon.json` (see connectors/daemon/status.py)."""
        if self._assembled is None:
            return
        depth = self._assembled.store.inbox.depth()
        dispatcher, scheduler = self.dispatcher, self.scheduler
        jobs: dict[str, dict[str, Any]] = {}
        if scheduler is not None:
            for name, job in scheduler.jobs.items():
                last = scheduler.history.get(name)
                upcoming = scheduler.next_runs.get(name)
                jobs[name] = {
                    "schedule": job.cron.text,
                    "next_run": upcoming.isoformat() if isinstance(upcoming, datetime) else None,
                    "last": None if last is None else asdict(last),
                }
        report = DaemonReport(
            pid=os.getpid(),
            state=self._state,
            started_at=self._started_at,
            updated_at=time.time(),
            channels=[supervisor.snapshot() for supervisor in self.supervisors.values()],
            queue={
                "pending": depth.pending,
                "failed": depth.failed,
                "in_flight": 0 if dispatcher is None else dispatcher.in_flight,
                "approvals_open": 0 if dispatcher is None else len(dispatcher.approvals),
                "duplicates_dropped": 0 if self.inbox is None else self.inbox.duplicates,
            },
            jobs=jobs,
            executor_version=self._executor_version(),
            learner=read_progress(self.config.data_dir),
        )
        write_report(self.status_path, report)


def _take_lock(path: Path) -> IO[str]:
    """Hold an exclusive lock on `path` for the daemon's life (the kernel drops it if we die)."""
    handle = open(path, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "?"
        handle.close()
        raise DaemonError(f"another temper daemon (pid {holder}) is running on {path.parent}") from None
    handle.truncate(0)
    handle.write(str(os.getpid()))
    handle.flush()
    return handle
