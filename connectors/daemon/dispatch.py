"""The dispatcher: inbox items -> the agent -> replies through the channels.

Order and concurrency. Items are handed out per lane (memory/inbox.py): one session's messages
one after another, different sessions side by side, at most `concurrency` turns at once. Button
presses and reactions have lanes of their own and do not count against that bound, so the
button a waiting turn needs is always answered. Nothing is kept per session beyond the tasks
in flight.

A message, from the inbox to done:

    a stranger?        -> the one pairing reply (memory/access.py), or dropped
    /good or /bad      -> feedback on the session's latest episode, a one-line reply
    /link [CODE]       -> a one-time code to link another account, or linking this one (linking.py;
                          with operator approval, a request `temper users approve` decides)
    anything else      -> Agent.turn, typing shown once it runs a while, approvals asked with buttons;
                          Replied (or TurnFailed: an apology) becomes the reply
    the reply          -> recorded (the intent) -> sent -> its platform ids recorded and the
                          item finished, in one transaction

Exactly once. Because the reply is recorded before it is sent and the item finishes in the
transaction that records what was sent, a crash leaves one of three states. No reply recorded:
the turn runs again (the model is asked again; nothing went out). A reply recorded, not marked
sent: the same text is sent again without a new turn, after asking the channel whether it went
out already (`KnowsSent`: Slack can tell); a channel that cannot tell (Telegram) sends it again,
a duplicate only if the crash fell between the platform accepting it and our commit. That
window is the platform's answer travelling back plus the event loop getting to it: about a
millisecond when idle, but measured at 5 ms (p50; 8 ms p90) with 4 turns at once on a busy
2-core machine and 9 ms (13 ms) with 8, so a crash under load repeats a reply or two
(tests/connectors/test_daemon_chaos.py). Marked sent: the item is done and never handed out
again.

Failures. A send refused with a short Retry-After is retried in place; otherwise the item is
deferred with backoff (its recorded reply kept) and the channel's supervisor told, which
restarts a channel whose sends keep failing; a fatal send error fails the item. A turn that
raises (a bug, a sandbox that will not start) defers the item; after `max_attempts` it is
`failed` and logged, and the session's next message goes on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from contextlib import aclosing
from dataclasses import dataclass

from connectors.channel import ButtonPress, Channel, ChannelError, Delivered, KnowsSent, Outgoing, Reaction
from connectors.daemon.access import Access
from connectors.daemon.approvals import Approvals
from connectors.daemon.inbox import decode
from connectors.daemon.linking import LinkApproval, is_link_command, link_reply
from connectors.daemon.supervisor import ChannelSupervisor
from memory import InboxItem, MemoryStore, Reply
from runtime import Agent, ApprovalRequested, Inbound, Replied, TurnFailed

log = logging.getLogger("temper.dispatch")

QUICK_KINDS = ("button", "reaction")
QUICK_BATCH = 64  # button presses and reactions handed out per look
FEEDBACK = {"/good": True, "/bad": False}
EMPTY_REPLY = "(I have nothing to add.)"


@dataclass(frozen=True)
class DispatchSettings:
    concurrency: int = 4  # turns at once; keep it at most the sandboxes kept open (Workspaces.max_open)
    approval_timeout_s: float = 300.0
    typing_interval_s: float = 4.0
    # A quick answer needs no typing indicator (Telegram asks bots to show one only for a
    # noticeable wait): it first shows after this long, or after one interval if that is shorter.
    typing_delay_s: float = 1.0
    max_attempts: int = 5
    retry_base_s: float = 2.0
    retry_max_s: float = 300.0
    max_inline_retry_s: float = 30.0  # a longer Retry-After defers the item instead of waiting in place
    link_code_ttl_s: float = 600.0  # how long a /link code stays valid ([users] link_code_ttl_s)
    link_approval: LinkApproval = "none"  # "operator": a sent code waits for `temper users approve`
    poll_s: float = 1.0


class Dispatcher:
    def __init__(
        self,
        store: MemoryStore,
        agent: Agent,
        access: Access,
        supervisors: Mapping[str, ChannelSupervisor],
        settings: DispatchSettings | None = None,
    ) -> None:
        self.store = store
        self.agent = agent
        self.access = access
        self.supervisors = supervisors
        self.settings = settings or DispatchSettings()
        self.approvals = Approvals(self.settings.approval_timeout_s)
        self.accepting = True  # hand out new messages (False while draining)
        self._busy: dict[str, asyncio.Task[None]] = {}
        self._turns = 0
        self._wake = asyncio.Event()
        # Whether button presses or reactions may wait: looked for at the start, after one is
        # delivered or finished, and at every tick, not on each message's wake-up (a burst of
        # messages would otherwise pay an inbox query per message for presses that rarely exist).
        self._quick_due = True

    @property
    def in_flight(self) -> int:
        return self._turns

    def wake(self, *, quick: bool = False) -> None:
        """Hand out due items soon; `quick`: a button press or reaction was delivered."""
        self._quick_due = self._quick_due or quick
        self._wake.set()

    async def run(self) -> None:
        """Until cancelled: hand out due items, then wait for a delivery, a finished item or a tick."""
        while True:
            self._wake.clear()
            self._claim()
            try:  # not wait_for: on 3.11 it can swallow a cancellation that meets a wake-up
                async with asyncio.timeout(self.settings.poll_s):
                    await self._wake.wait()
            except TimeoutError:
                self._quick_due = True  # deferred presses come due, stopped channels come back

    def _claim(self) -> None:
        platforms = [name for name, supervisor in self.supervisors.items() if supervisor.channel is not None]
        heads = self.store.inbox.heads
        if self._quick_due:
            quick = heads(kinds=QUICK_KINDS, platforms=platforms, busy_lanes=self._busy, limit=QUICK_BATCH)
            self._quick_due = len(quick) == QUICK_BATCH  # a full batch: more may wait
            for item in quick:
                self._start(item, is_turn=False)
        if self.accepting:
            free = self.settings.concurrency - self._turns
            for item in heads(kinds=("message",), platforms=platforms, busy_lanes=self._busy, limit=free):
                self._start(item, is_turn=True)

    def _start(self, item: InboxItem, *, is_turn: bool) -> None:
        task = asyncio.create_task(self._process(item), name=f"inbox item {item.id}")
        self._busy[item.lane] = task
        self._turns += is_turn

        def finished(_: object) -> None:
            self._busy.pop(item.lane, None)
            self._turns -= is_turn
            self.wake(quick=not is_turn)

        task.add_done_callback(finished)

    async def drain(self, timeout_s: float, forced: asyncio.Event) -> int:
        """Stop handing out messages and let the turns in flight finish, for at most `timeout_s`
        (or until `forced` is set); then cancel what is left. How many were cancelled."""
        self.accepting = False
        deadline = time.monotonic() + timeout_s
        while self._turns and not forced.is_set() and (left := deadline - time.monotonic()) > 0:
            force = asyncio.create_task(forced.wait())
            await asyncio.wait(
                {*self._busy.values(), force}, timeout=left, return_when=asyncio.FIRST_COMPLETED
            )
            force.cancel()
        return await self.cancel()

    async def cancel(self) -> int:
        """Cancel every item in flight (each stays pending and resumes at the next start)."""
        tasks = list(self._busy.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return len(tasks)

    # --- one item ---------------------------------------------------------------------------

    async def _process(self, item: InboxItem) -> None:
        supervisor = self.supervisors[item.platform]
        try:
            await self._handle(item, supervisor)
        except ChannelError as error:
            supervisor.send_failed(error)
            if error.fatal:
                log.error("inbox item %s: %s: fatal, not retried", item.id, error)
                self.store.inbox.finish(item.id, "failed")
            else:
                self._defer(item, error, error.retry_after_s or 0.0)
        except Exception as error:  # a bug or a broken sandbox in one turn must not stop the daemon
            log.exception("inbox item %s failed (attempt %d)", item.id, item.attempts + 1)
            self._defer(item, error)

    def _defer(self, item: InboxItem, error: Exception, at_least_s: float = 0.0) -> None:
        settings = self.settings
        delay = max(min(settings.retry_base_s * 2**item.attempts, settings.retry_max_s), at_least_s)
        if self.store.inbox.defer(item.id, delay, f"{type(error).__name__}: {error}", settings.max_attempts):
            log.error("inbox item %s failed %d times; given up: %s", item.id, settings.max_attempts, error)

    async def _handle(self, item: InboxItem, supervisor: ChannelSupervisor) -> None:
        reply = self.store.inbox.reply_for(item.id)
        if reply is not None:  # recorded by an earlier attempt: send that, never a second answer
            await self._send(supervisor, reply, resumed=True)
            return
        delivered = decode(item)
        if not self.access.allows(delivered.platform, delivered.user_id):
            note = self.access.pairing_reply(delivered) if isinstance(delivered, Inbound) else None
            await self._reply_or_finish(item, supervisor, delivered, note, "dropped")
        elif isinstance(delivered, ButtonPress):
            await self._reply_or_finish(item, supervisor, delivered, self.approvals.answer(delivered), "done")
        elif isinstance(delivered, Reaction):
            self.store.inbox.finish(item.id, "done" if self._react(delivered) else "dropped")
        elif (good := FEEDBACK.get(delivered.text.strip().split("@")[0].lower())) is not None:
            await self._reply(item, supervisor, delivered, self._feedback(delivered, good), None)
        elif is_link_command(delivered.text):
            settings = self.settings
            text = link_reply(self.store, delivered, settings.link_code_ttl_s, settings.link_approval)
            await self._reply(item, supervisor, delivered, text, None)
        else:
            await self._turn(item, supervisor, delivered)

    async def _turn(self, item: InboxItem, supervisor: ChannelSupervisor, inbound: Inbound) -> None:
        channel = _running(supervisor)
        typing = asyncio.create_task(self._keep_typing(channel, inbound))
        try:
            async with aclosing(self.agent.turn(inbound)) as events:
                async for event in events:
                    if isinstance(event, ApprovalRequested):
                        await self.approvals.ask(event, inbound, channel)
                    elif isinstance(event, Replied | TurnFailed):
                        typing.cancel()
                        text = event.text if isinstance(event, Replied) else apology(event.error)
                        await self._reply(item, supervisor, inbound, text, event.episode_id)
        finally:
            typing.cancel()

    def _react(self, reaction: Reaction) -> bool:
        """A thumbs up/down by the person the reacted-to answer was for: their reward on its episode."""
        episode_id = self.store.inbox.episode_for_sent_message(
            reaction.platform, reaction.chat_id, reaction.message_id
        )
        user_id = self.store.user_for_identity(reaction.platform, reaction.user_id)
        if episode_id is None or user_id is None or self.store.episodes.get(episode_id).user_id != user_id:
            return False
        reason = "reaction: thumbs up" if reaction.positive else "reaction: thumbs down"
        self.store.episodes.record_reward(episode_id, 1.0 if reaction.positive else 0.0, "user", reason)
        return True

    def _feedback(self, inbound: Inbound, good: bool) -> str:
        if self.agent.feedback(inbound.session_key, good) is None:
            return "There is no answer of mine here to rate yet."
        return "Thanks, noted as a good answer." if good else "Thanks, noted; I'll try to do better."

    # --- replies ----------------------------------------------------------------------------

    async def _reply_or_finish(
        self, item: InboxItem, supervisor: ChannelSupervisor, to: Delivered, text: str | None, status: str
    ) -> None:
        if text is None:
            self.store.inbox.finish(item.id, status)
        else:
            await self._reply(item, supervisor, to, text, None)

    async def _reply(
        self, item: InboxItem, supervisor: ChannelSupervisor, to: Delivered, text: str, episode_id: int | None
    ) -> None:
        """Record the reply (the intent), then send it."""
        reply = self.store.inbox.add_reply(
            item.id,
            platform=to.platform,
            chat_id=to.chat_id,
            thread_id=to.thread_id if isinstance(to, Inbound) else "",
            reply_to=to.platform_message_id if isinstance(to, Inbound) else None,
            text=text if text.strip() else EMPTY_REPLY,
            episode_id=episode_id,
        )
        await self._send(supervisor, reply, resumed=False)

    async def _send(self, supervisor: ChannelSupervisor, reply: Reply, *, resumed: bool) -> None:
        channel = _running(supervisor)
        message = Outgoing(reply.chat_id, reply.text, reply.thread_id, reply.reply_to, reply.idempotency_key)
        sent = await channel.find_sent(message) if resumed and isinstance(channel, KnowsSent) else None
        if sent is None:
            sent = await self._send_with_retry(channel, message)
        supervisor.send_succeeded()
        self.store.inbox.mark_sent(reply, sent)

    async def _send_with_retry(self, channel: Channel, message: Outgoing) -> list[str]:
        for attempt in range(3):
            try:
                return await channel.send(message)
            except ChannelError as error:
                wait = error.retry_after_s
                if error.fatal or wait is None or wait > self.settings.max_inline_retry_s or attempt == 2:
                    raise
                await asyncio.sleep(wait)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _keep_typing(self, channel: Channel, inbound: Inbound) -> None:
        await asyncio.sleep(min(self.settings.typing_delay_s, self.settings.typing_interval_s))
        while True:
            try:
                await channel.typing(inbound.chat_id, inbound.thread_id)
            except ChannelError as error:  # best effort by contract; a channel that raises anyway is noted
                log.debug("typing on %s: %s", inbound.platform, error)
            await asyncio.sleep(self.settings.typing_interval_s)


def _running(supervisor: ChannelSupervisor) -> Channel:
    if supervisor.channel is None:
        raise ChannelError(f"{supervisor.name} is not running ({supervisor.state})")
    return supervisor.channel


def apology(error: str) -> str:
    return f"Sorry, I could not answer that: {error}. Please try again in a little while."
