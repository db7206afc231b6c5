"""The daemon: temper as a service. service.py runs it (startup -> main loop -> shutdown, the
lock, signals); channels.py builds the enabled chat channels and supervisor.py keeps each one
running; inbox.py writes every delivered message to the durable inbox and dispatch.py answers
it (access.py: who may talk; approvals.py: buttons); schedule.py runs the cron jobs (the
nightly learner); status.py writes the health report; systemd.py the unit and notifications.

The surface is loaded on first use: the config's validation reads schedule.py's cron parser,
and that must not pull in the agent, the runtime and the chat libraries.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connectors.daemon.service import Daemon, DaemonError, DaemonSettings, learner_job

__all__ = ["Daemon", "DaemonError", "DaemonSettings", "learner_job"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from connectors.daemon import service

        return getattr(service, name)
    raise AttributeError(f"module 'connectors.daemon' has no attribute {name!r}")
