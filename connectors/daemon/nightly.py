"""The learner's nightly job in the daemon: the cycle runs in a worker process
(connectors/nightly/), and its report goes to the chats `[learner] report_to` names.

    job = learner_job(config, cron, NightlyRun(config), announce)   # None: nothing to train

The job's detail (`temper status`, daemon.json) is the cycle's summary line, or says that it
was cancelled; a worker that failed makes the job fail with its log's last lines. Whether a
promotion happened is in the worker's result (`CycleOutcome.promoted`) and in the executor
versions' `current` pointer, which the running agent follows.

`announce(text)` sends one message to each `report_to` chat ("telegram:12345", "slack:C0123")
through that platform's running channel. A chat that cannot be reached (its channel is not
enabled or not running, the platform refuses) is logged and skipped: reporting never fails the
job, let alone the daemon.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

from connectors.channel import Outgoing
from connectors.config import Config
from connectors.daemon.schedule import Cron, Job
from connectors.daemon.status import LEARNER_JOB
from connectors.daemon.supervisor import ChannelSupervisor
from connectors.nightly.runner import NightlyRun, WorkerFailed
from connectors.nightly.worker import CycleOutcome

log = logging.getLogger("temper.learner")

Announce = Callable[[str], Awaitable[None]]


def learner_job(
    config: Config, cron: Cron, nightly: NightlyRun | None = None, announce: Announce | None = None
) -> Job | None:
    """The learner's nightly cycle (connectors/learning.py) as a job, when there is an executor
    model to train: `[executor] backend = "local"`, or "openai" (served: vLLM, `temper serve
    executor`), with the model_dir the learner trains from; else None."""
    if config.executor.backend not in ("local", "openai") or config.executor.model_dir is None:
        return None
    run = nightly or NightlyRun(config)

    async def cycle() -> str:
        try:
            outcome = await run.run()
        except WorkerFailed as failure:
            if announce is not None:
                await announce(f"temper's learning cycle failed: {failure}")
            raise
        if outcome.phase == "cancelled":
            return f"cancelled ({outcome.error}); the next run resumes from its checkpoint"
        if announce is not None and outcome.report:
            await announce(outcome.report)
        return job_detail(outcome)

    return Job(LEARNER_JOB, cron, cycle)


def job_detail(outcome: CycleOutcome) -> str:
    """What `temper status` shows of a finished night: its summary line, which names the version
    it promoted ("Night of ...: promoted v3 (held-out ...)"), and the version only when it does not."""
    if outcome.promoted and outcome.promoted not in outcome.summary.split():
        return (
            f"{outcome.summary}; promoted {outcome.promoted}"
            if outcome.summary
            else f"promoted {outcome.promoted}"
        )
    return outcome.summary


async def announce_to_chats(
    supervisors: Mapping[str, ChannelSupervisor], chats: Sequence[str], text: str
) -> int:
    """Send `text` to each chat ("platform:chat_id"); how many got it. Failures are logged."""
    sent = 0
    key = f"learner-report-{time.time_ns()}"
    for target in chats:
        platform, _, chat_id = target.partition(":")
        supervisor = supervisors.get(platform)
        channel = None if supervisor is None else supervisor.channel
        if not chat_id or channel is None:
            why = "not 'platform:chat'" if not chat_id else f"the {platform} channel is not running"
            log.warning("learner report to %s not sent: %s", target, why)
            continue
        try:
            await channel.send(Outgoing(chat_id=chat_id, text=text, idempotency_key=f"{key}-{target}"))
            sent += 1
        except Exception as error:  # a platform's refusal or a connector's bug: logged, never raised
            log.warning("learner report to %s not sent: %s: %s", target, type(error).__name__, error)
    return sent
