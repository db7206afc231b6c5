"""Keeping one channel running: construct, start, watch, and restart it with backoff.

A channel is restarted when `start` fails, when it reports that receiving stopped on its own
(`ReportsStop`), or when its sends keep failing (`failures_before_restart` in a row). The
backoff doubles from `base_s` to `max_s` and starts over once a channel stayed up for
`stable_s`. A fatal error (bad token, a channel class that does not exist) stops the restarts:
retrying cannot help; the state says why. Whatever a channel raises, only its own supervisor
sees it: the other channels and the daemon go on.

States: starting -> running -> (backoff -> starting ...) ; failed (fatal) ; stopped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from connectors.channel import Channel, ChannelError, Deliver, ReportsStop

log = logging.getLogger("temper.channels")


class ChannelUnavailable(Exception):
    """A channel that cannot be constructed at all (its module or class is missing)."""


@dataclass(frozen=True)
class RestartPolicy:
    base_s: float = 1.0
    max_s: float = 300.0
    stable_s: float = 60.0
    failures_before_restart: int = 3


@dataclass(frozen=True)
class ChannelState:
    name: str
    state: str
    since: float
    restarts: int
    last_error: str | None


class ChannelSupervisor:
    def __init__(
        self,
        name: str,
        construct: Callable[[], Channel],
        deliver: Deliver,
        policy: RestartPolicy | None = None,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self.name = name
        self.construct = construct
        self.deliver = deliver
        self.policy = policy or RestartPolicy()
        self.on_change = on_change
        self.channel: Channel | None = None  # set only while running
        self.state = "stopped"
        self.since = time.time()
        self.restarts = 0
        self.last_error: str | None = None
        self._send_failures = 0
        self._broken: asyncio.Future[str] | None = None
        self._task: asyncio.Task[None] | None = None

    def snapshot(self) -> ChannelState:
        return ChannelState(self.name, self.state, self.since, self.restarts, self.last_error)

    async def run(self) -> None:
        """Until cancelled (or a fatal error): keep the channel running."""
        backoff = self.policy.base_s
        while True:
            self._set("starting")
            started = time.monotonic()
            try:
                error = await self._run_once()
            except ChannelUnavailable as unavailable:
                self._set("failed", str(unavailable))
                return
            except ChannelError as failure:
                if failure.fatal:
                    self._set("failed", f"{failure} (fatal: fix the configuration and restart the daemon)")
                    return
                error = str(failure)
            except Exception as failure:  # a connector's bug must not take the daemon down
                log.exception("channel %s failed", self.name)
                error = f"{type(failure).__name__}: {failure}"
            if time.monotonic() - started >= self.policy.stable_s:
                backoff = self.policy.base_s
            self.restarts += 1
            self._set("backoff", error)
            log.warning("channel %s: %s; restarting in %.1f s", self.name, error, backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.policy.max_s)

    async def _run_once(self) -> str:
        """Start the channel and wait until it breaks; why it broke."""
        channel = self.construct()
        if channel.platform != self.name:
            raise ChannelUnavailable(f"{self.name}: the channel says its platform is {channel.platform!r}")
        self._broken = asyncio.get_running_loop().create_future()
        self._send_failures = 0
        try:
            await channel.start(self.deliver)
            self.channel = channel
            self._set("running")
            watchers: set[asyncio.Future[str]] = {self._broken}
            if isinstance(channel, ReportsStop):
                watchers.add(asyncio.ensure_future(_stopped(channel)))
            try:
                done, _ = await asyncio.wait(watchers, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for watcher in watchers:
                    watcher.cancel()
            return next(iter(done)).result()
        finally:
            self.channel = None
            await _stop_quietly(self.name, channel)

    def send_failed(self, error: ChannelError) -> None:
        """The dispatcher could not send through this channel; enough in a row restart it."""
        self._send_failures += 1
        self.last_error = str(error)
        if (
            self._send_failures >= self.policy.failures_before_restart
            and self._broken
            and not self._broken.done()
        ):
            self._broken.set_result(f"{self._send_failures} sends failed in a row, the last: {error}")

    def send_succeeded(self) -> None:
        self._send_failures = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self.run(), name=f"channel {self.name}")

    async def stop(self) -> None:
        """Stop supervising; the channel (if running) is stopped on the way out of `run`."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._set("stopped")

    def _set(self, state: str, error: str | None = None) -> None:
        self.state = state
        self.since = time.time()
        if error is not None:
            self.last_error = error
        self.on_change()


async def _stopped(channel: ReportsStop) -> str:
    """Why receiving ended on its own; a fatal ChannelError is raised on (no restart helps)."""
    try:
        await channel.wait_stopped()
    except ChannelError as error:
        if error.fatal:
            raise
        return str(error)
    except Exception as error:  # whatever ended the channel's receiving: restart it
        return f"{type(error).__name__}: {error}"
    return "receiving stopped"


async def _stop_quietly(name: str, channel: Channel) -> None:
    try:
        await channel.stop()
    except Exception:  # stopping a broken channel may fail too; it is being replaced or shut down
        log.exception("channel %s did not stop cleanly", name)
