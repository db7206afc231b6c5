"""The agent loop. One turn, top to bottom:

    receive -> plan -> execute -> return -> evaluate -> learn

- receive: store the person's message (once, by platform message id), find their session.
- plan: build the planner's context (runtime/context.py).
- direct: a message of a kind the executor has mastered goes to it without a planner call
  (runtime/direct_route.py); when its run completes, that is the reply and the planner is not
  called; otherwise the planner takes the turn over, the attempt in its context.
- execute: call the planner; run the tools it asks for until it answers. Tool failures are
  data the planner sees ("Error: ..."); a planner that stays unreachable after retries and
  fallbacks ends the turn with TurnFailed; bugs raise.
- return: store the reply and yield it, so the connector can send it at once.
- evaluate: score the turn (runtime/evaluate.py). This departs from DESIGN.md's order
  (evaluate, then return) on purpose: a judge call on the reply path would add a model call
  of latency to every answer, and nothing in the reply depends on the score.
- learn: off the reply path, compact the session if it grew long, and every few turns extract
  facts about the person (runtime/user_model.py; also from their sessions that went quiet),
  and review the turn's work for a skill worth keeping or patching (runtime/skill_review.py).

Everything observable is an event (runtime/events.py); the loop itself never prints or logs.
A turn cancelled part way (Ctrl-C in the CLI) leaves its episode `abandoned`; what was said
and done until then stays stored.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from memory import MemoryStore, ToolCallRecord
from runtime import evaluate
from runtime.compaction import CompactionSettings, compact_if_long
from runtime.context import ContextSettings, SessionRef, build_messages
from runtime.direct_route import DirectRunner, completed, direct_call, direct_reply
from runtime.events import (
    ApprovalRequested,
    Evaluated,
    Event,
    ModelCalled,
    Replied,
    ReplyDelta,
    ToolCalled,
    ToolReturned,
    TurnFailed,
    TurnStarted,
)
from runtime.inbound import Inbound
from runtime.models import ChatModel, ModelError, ModelReply, TextDelta, ToolCall, close_model_clients
from runtime.skill_catalog import SkillCatalog
from runtime.skill_review import TurnRecord, learn_skills
from runtime.tools import ApprovalRequest, TerminalRunner, Toolbox, ToolContext, ToolError, ToolResult
from runtime.user_model import UserModel, UserModelSettings
from runtime.workspaces import Workspaces

APPROVAL_TIMEOUT_S = 600.0
STANDING_SESSIONS = 4096  # sessions whose "always" approvals are kept (least recently used forgotten)
T = TypeVar("T")


@dataclass(frozen=True)
class AgentSettings:
    max_tool_rounds: int = 16
    context: ContextSettings = field(default_factory=ContextSettings)
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    judge_turns_without_tools: bool = False
    stream: bool = True  # ReplyDelta events as text arrives (litellm streaming costs ~8 ms more a call)
    command_timeout_s: float | None = None  # the ceiling of any command's timeout ([sandbox] timeout_s)
    user_model: UserModelSettings = field(default_factory=UserModelSettings)


@dataclass
class _Turn:
    """What one turn accumulates while it runs."""

    session: SessionRef
    inbound: Inbound
    episode_id: int
    messages: list[dict[str, Any]]
    reply: str = ""
    tools_used: int = 0
    context: ToolContext | None = None


class Agent:
    def __init__(
        self,
        store: MemoryStore,
        planner: ChatModel,
        toolbox: Toolbox,
        workspaces: Workspaces,
        judge: ChatModel | None = None,
        settings: AgentSettings | None = None,
        terminal: TerminalRunner | None = None,
        skills: SkillCatalog | None = None,
        direct: DirectRunner | None = None,
    ) -> None:
        self.skills = skills  # the skill library and its index; None: no skills in prompts or reviews
        self.store = store
        self.terminal = terminal  # the executor behind terminal_task, when the toolbox has it
        self.direct = direct  # the direct route to the executor model (None: every turn is planned)
        self.planner = planner
        self.toolbox = toolbox
        self.workspaces = workspaces
        self.judge = judge
        self.settings = settings or AgentSettings()
        # per session: the rules and commands the operator allowed for the rest of it; bounded, so
        # a long-running daemon stays flat (a session forgotten here is asked again)
        self._standing: OrderedDict[int, tuple[set[str], set[str]]] = OrderedDict()
        self._learning: set[asyncio.Task[None]] = set()
        self.user_model = UserModel(store, planner, self.settings.user_model)

    async def turn(self, inbound: Inbound) -> AsyncIterator[Event]:
        """Answer one message; yields the turn's events in order (see runtime/events.py)."""
        with self.store.transaction():  # the message and its episode are stored together
            session, request_id = self.receive(inbound)
            episode_id = self.store.episodes.start(session.id, session.user_id, inbound.text, request_id)
        yield TurnStarted(session.key, episode_id)
        turn = _Turn(session, inbound, episode_id, self.plan(session, inbound.text, episode_id))
        finished = False
        try:
            async for event in self.execute(turn):
                yield event
            finished = True
        except ModelError as error:
            self.store.episodes.finish(episode_id, "failed")
            yield TurnFailed(str(error), episode_id)
            return
        finally:
            if not finished and self.store.episodes.get(episode_id).status == "running":
                self.store.episodes.finish(episode_id, "abandoned")
        yield self.reply(turn)
        yield await self.evaluate(turn)
        self.learn(session, turn)

    # --- receive ---------------------------------------------------------------------------

    def receive(self, inbound: Inbound) -> tuple[SessionRef, int]:
        """Store the message once (a repeated platform message id finds the stored one)."""
        user_id = self.store.links.ensure_identity(inbound.platform, inbound.user_id, inbound.user_name)
        handle = self.store.user_handle(user_id)
        session_id = self.store.ensure_session(
            inbound.session_key,
            platform=inbound.platform,
            chat_id=inbound.chat_id,
            thread_id=inbound.thread_id,
            user_id=user_id,
            platform_user_id=inbound.user_id,
        )
        external_id = (
            f"{inbound.platform}:{inbound.chat_id}:{inbound.platform_message_id}"
            if inbound.platform_message_id is not None
            else None
        )
        message_id = self.store.add_message(
            session_id=session_id, user_id=user_id, role="user", content=inbound.text, external_id=external_id
        )
        return SessionRef(session_id, inbound.session_key, user_id, handle), message_id

    # --- plan ------------------------------------------------------------------------------

    def plan(self, session: SessionRef, question: str, episode_id: int | None = None) -> list[dict[str, Any]]:
        skills = self.skills
        if skills is None:
            return build_messages(self.store, session, question, self.settings.context)
        return build_messages(  # the skills for this request, recorded as offered to the turn
            self.store, session, question, self.settings.context,
            skill_index=lambda request, turns: skills.offer(episode_id, request, [t.content for t in turns]),
        )  # fmt: skip

    # --- execute ---------------------------------------------------------------------------

    async def execute(self, turn: _Turn) -> AsyncIterator[Event]:
        if self.direct is not None:
            async for event in self._execute_directly(turn, self.direct):
                yield event
            if turn.reply:
                return
        schemas = self.toolbox.schemas()
        for _ in range(self.settings.max_tool_rounds):
            if self.settings.stream:
                reply: ModelReply | None = None
                async for item in self.planner.stream(turn.messages, schemas):
                    if isinstance(item, TextDelta):
                        yield ReplyDelta(item.text)
                    else:
                        reply = item
                if reply is None:
                    raise RuntimeError(
                        "a model stream ended without its reply"
                    )  # runtime/models guarantees one
            else:
                reply = await self.planner.complete(turn.messages, schemas)
            usage = reply.usage
            yield ModelCalled(
                reply.model,
                usage.prompt_tokens,
                usage.completion_tokens,
                reply.latency_s,
                len(reply.tool_calls),
            )
            if not reply.tool_calls:
                turn.reply = reply.text
                return
            self._remember_assistant(turn, reply)
            for call in reply.tool_calls:
                yield ToolCalled(call.id, call.name, call.arguments)
                result: ToolResult | None = None
                async for step in self._run_tool(turn, call):
                    if isinstance(step, ApprovalRequested):
                        yield step
                    else:
                        result = step
                assert result is not None
                turn.tools_used += 1
                turn.messages.append({"role": "tool", "tool_call_id": call.id, "content": result.text})
                self.store.add_message(
                    session_id=turn.session.id, user_id=turn.session.user_id, role="tool",
                    content=result.text, tool_call_id=call.id,
                )  # fmt: skip
                yield ToolReturned(call.id, call.name, result.text, result.is_error, result.duration_s)
        turn.reply = (
            f"I stopped after {self.settings.max_tool_rounds} rounds of tool calls without finishing. "
            "Tell me how to continue, or narrow the task."
        )

    async def _execute_directly(self, turn: _Turn, direct: DirectRunner) -> AsyncIterator[Event]:
        """The direct route (runtime/direct_route.py): sets `turn.reply` when the executor's run
        answers the message by itself; stores the attempt for the planner otherwise."""
        request = turn.inbound.text
        run = None
        started = time.perf_counter()
        try:
            async for step in self._with_approvals(turn, lambda context: direct(request, context)):
                if isinstance(step, ApprovalRequested):
                    yield step
                else:
                    run = step
        except ToolError:
            return  # the executor model failed (its episode is recorded): the planner's turn
        if run is None:
            return
        call = direct_call(turn.episode_id, request)
        self._remember_assistant(turn, ModelReply("", (call,)))
        yield ToolCalled(call.id, call.name, call.arguments)
        report = run.report()
        turn.tools_used += 1
        turn.messages.append({"role": "tool", "tool_call_id": call.id, "content": report})
        self.store.add_message(
            session_id=turn.session.id, user_id=turn.session.user_id, role="tool",
            content=report, tool_call_id=call.id,
        )  # fmt: skip
        yield ToolReturned(call.id, call.name, report, not completed(run), time.perf_counter() - started)
        if completed(run):
            turn.reply = direct_reply(run)

    def _remember_assistant(self, turn: _Turn, reply: ModelReply) -> None:
        turn.messages.append(reply.to_message())
        self.store.add_message(
            session_id=turn.session.id,
            user_id=turn.session.user_id,
            role="assistant",
            content=reply.text,
            tool_calls=[ToolCallRecord(c.id, c.name, c.arguments) for c in reply.tool_calls],
        )

    def _run_tool(self, turn: _Turn, call: ToolCall) -> AsyncIterator[ApprovalRequested | ToolResult]:
        """Run one tool call, yielding any approval it asks for, then its result."""
        return self._with_approvals(
            turn, lambda context: self.toolbox.call(call.name, call.arguments, context)
        )

    async def _with_approvals(
        self, turn: _Turn, work: Callable[[ToolContext], Coroutine[Any, Any, T]]
    ) -> AsyncIterator[ApprovalRequested | T]:
        """Run `work` in the turn's tool context, yielding any approval it asks for, then its
        result (its exception, raised)."""
        requests: asyncio.Queue[ApprovalRequested] = asyncio.Queue()
        context = await self._tool_context(turn, requests)
        task = asyncio.create_task(work(context))
        try:
            while not task.done():
                waiting = asyncio.create_task(requests.get())
                await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
                if waiting.done():
                    yield waiting.result()
                else:
                    waiting.cancel()
            yield task.result()
        finally:
            if not task.done():  # the turn was cancelled while the tool ran
                task.cancel()

    async def _tool_context(self, turn: _Turn, requests: asyncio.Queue[ApprovalRequested]) -> ToolContext:
        session = turn.session
        standing = self._standing.setdefault(session.id, (set(), set()))
        self._standing.move_to_end(session.id)
        if len(self._standing) > STANDING_SESSIONS:
            self._standing.popitem(last=False)

        async def approve(request: ApprovalRequest) -> bool:
            event = ApprovalRequested(
                request.command, request.reason, request.rule, asyncio.get_running_loop().create_future()
            )
            await requests.put(event)
            try:
                approved, remember = await asyncio.wait_for(
                    asyncio.shield(event.decision), APPROVAL_TIMEOUT_S
                )
            except TimeoutError:
                return False
            if approved and remember:
                context.allow_for_session(request, whole_rule=True)
            return approved

        sandbox = await self.workspaces.get(session.id, self.store.workspace_snapshot(session.id))
        context = ToolContext(
            user=session.user_handle,
            sandbox=sandbox,
            memory=self.store,
            session_id=session.id,
            approve=approve,
            allowed_rules=standing[0],
            allowed_commands=standing[1],
            terminal=self.terminal,
            command_timeout_s=self.settings.command_timeout_s,
            episode_id=turn.episode_id,
        )
        return context

    # --- return ----------------------------------------------------------------------------

    def reply(self, turn: _Turn) -> Replied:
        session = turn.session
        with self.store.transaction():
            message_id = self.store.add_message(
                session_id=session.id, user_id=session.user_id, role="assistant", content=turn.reply
            )
            self.store.episodes.finish(turn.episode_id, "succeeded", message_id)
        turn.messages.append({"role": "assistant", "content": turn.reply})
        return Replied(turn.reply, message_id, turn.episode_id)

    # --- evaluate ---------------------------------------------------------------------------

    async def evaluate(self, turn: _Turn) -> Evaluated:
        if turn.inbound.verifier is not None:
            sandbox = await self.workspaces.get(
                turn.session.id, self.store.workspace_snapshot(turn.session.id)
            )
            score = await evaluate.verify(sandbox.run, turn.inbound.verifier)
        elif self.judge is not None and (turn.tools_used or self.settings.judge_turns_without_tools):
            score = await evaluate.judge(self.judge, turn.inbound.text, turn.messages, turn.reply)
        else:
            score = evaluate.Score(None, None, "nothing to score: no verifier and no tool work")
        if score.reward is not None and score.source is not None:
            self.store.episodes.record_reward(turn.episode_id, score.reward, score.source, score.reason)
        return Evaluated(turn.episode_id, score.reward, score.source, score.reason)

    def feedback(self, session_key: str, good: bool) -> int | None:
        """A person's /good or /bad on the session's latest episode; its id, or None."""
        session_id = self.store.session_id(session_key)
        episode = None if session_id is None else self.store.episodes.latest(session_id)
        if episode is None:
            return None
        self.store.episodes.record_reward(
            episode.id, 1.0 if good else 0.0, "user", "/good" if good else "/bad"
        )
        return episode.id

    # --- learn -----------------------------------------------------------------------------

    def learn(self, session: SessionRef, turn: _Turn | None = None) -> None:
        """Start the after-reply work in the background (its failures end up in `drain`)."""
        task = asyncio.create_task(self._learn(session, turn))
        self._learning.add(task)
        task.add_done_callback(self._learning.discard)

    async def _learn(self, session: SessionRef, turn: _Turn | None = None) -> None:
        await compact_if_long(self.store, self.planner, session.id, self.settings.compaction)
        await self.user_model.after_turn(session)  # facts about the person, every few turns
        if self.skills is not None and turn is not None:  # a procedure worth keeping; failing skills
            await learn_skills(
                self.skills, self.planner, TurnRecord(turn.episode_id, turn.inbound.text, turn.messages)
            )

    async def drain(self) -> None:
        """Wait for after-reply work; raise the first failure (bugs must not vanish)."""
        if self._learning:
            results = await asyncio.gather(*self._learning, return_exceptions=True)
            for result in results:
                if isinstance(result, ModelError):
                    continue  # a summary postponed: the next turn tries again
                if isinstance(result, BaseException):
                    raise result

    async def close(self) -> None:
        """Drain the after-reply work, then put the sandboxes away and close the model clients;
        those two also when the drain fails or is cut short (a forced exit's timeout)."""
        try:
            await self.drain()
        finally:
            try:
                await self.workspaces.close()
            finally:
                await close_model_clients()
