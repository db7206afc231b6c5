"""The week bench's planner: an OpenAI-compatible server on 127.0.0.1 that plays a capable planner.

    with ScriptedPlanner(tokenizer) as planner:       # config: [models.planner] api_base = planner.base_url
        planner.learn(task)                           # the tasks it knows how to solve
        ...                                           # the real Agent talks to it
        planner.tokens.total                          # every token it was sent and returned

Unlike tests/fakes/openai_server.py (a scripted queue: replies in the order enqueued, whatever
the request says), this one answers from the request, because the bench's traffic is not known
in advance: the nightly job, concurrent chat messages and the executor's loop all reach it.
It reuses that fake's HTTP server and wire format (tests/fakes/), so streaming and plain
completions look exactly as the agent's litellm client expects.

How it answers:
- The executor's work (the request starts with the executor's system prompt,
  runtime/executor/prompts.py: the planner route of `terminal_task`): the known task whose
  instruction is the query gets its reference solution as the executor's JSON actions
  (learner/tasks/task.py `reference_actions`), one per executor turn, the turn being the number
  of the planner's earlier replies in that conversation. An unknown query gets `task_complete`
  with an analysis that says so.
- A person's message (the last message is the user's): terminal work it knows (a known task's
  instruction in the text) goes to the `terminal_task` tool with the instruction as the query;
  anything else gets a short text reply (the latency probes' cheap chat).
- After a tool result: a short final reply quoting the report's first line.

Tokens: each request's prompt is counted as the text a chat model reads (each message's role,
content and tool calls, and the tool schemas as JSON) and each reply as its text and tool-call
arguments, with `tokenizer` (the bench passes the tiny executor's byte-level BPE tokenizer,
runtime/executor/tiny.py, trained in process). The same counts go back in `usage`. Counts are
kept apart for the agent's turns and for executor work, so the bench can say where they went.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from learner.tasks import Task, reference_actions
from runtime.executor.prompts import SYSTEM as EXECUTOR_SYSTEM
from tests.fakes.http_server import Request, Response, ThreadedFake, json_response
from tests.fakes.openai_wire import ScriptedReply, completion_body, error_body, event_stream

CHAT_PATH = "/v1/chat/completions"
UNKNOWN_TASK_ACTION = json.dumps(
    {"analysis": "I do not know how to do this task.", "commands": [], "task_complete": True}
)


class Tokenizer(Protocol):
    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...


@dataclass
class TokenCount:
    """Tokens the planner was sent (prompt) and returned (completion), and how many calls."""

    calls: int = 0
    prompt: int = 0
    completion: int = 0

    @property
    def total(self) -> int:
        return self.prompt + self.completion


@dataclass
class PlannerTokens:
    """All the planner's tokens, and the share that was executor work (the planner route)."""

    turns: TokenCount = field(default_factory=TokenCount)
    executor_work: TokenCount = field(default_factory=TokenCount)

    @property
    def total(self) -> int:
        return self.turns.total + self.executor_work.total


class ScriptedPlanner(ThreadedFake):
    """See the module docstring. Start it with `with`, `async with` or `start()`."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        super().__init__()
        self.tokenizer = tokenizer
        self.tokens = PlannerTokens()
        self.unknown_queries: list[str] = []
        self._known: dict[str, Task] = {}
        self._lock = threading.Lock()
        self._calls = 0

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def learn(self, task: Task) -> None:
        """Know how to solve `task` (its instruction is the key; a later task replaces an earlier)."""
        with self._lock:
            self._known[task.instruction] = task

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False)) if text else 0

    # Answering (called from the server's threads) ------------------------------------------

    def _answer(self, request: Request) -> Response:
        if request.method == "GET" and request.path.rstrip("/") == "/v1/models":
            return json_response({"object": "list", "data": [{"id": "planner", "object": "model"}]})
        if request.method != "POST" or request.path.rstrip("/") != CHAT_PATH:
            return Response(404, error_body(404, f"the week planner answers POST {CHAT_PATH}"))
        try:
            body = json.loads(request.body)
            messages = body["messages"]
        except (ValueError, KeyError, TypeError) as error:
            return Response(400, error_body(400, f"not a chat request: {error}"))
        executor_work = _is_executor_work(messages)
        reply = self._executor_reply(messages) if executor_work else self._turn_reply(messages)
        calls = [(self._call_id(), name, args) for name, args in reply.tool_calls]
        prompt = self.count(_prompt_text(messages, body.get("tools")))
        completion = self.count(
            (reply.full_text or "") + "".join(name + args for name, args in reply.tool_calls)
        )
        with self._lock:
            counter = self.tokens.executor_work if executor_work else self.tokens.turns
            counter.calls += 1
            counter.prompt += prompt
            counter.completion += completion
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        model = str(body.get("model", "planner"))
        if body.get("stream"):
            include = (body.get("stream_options") or {}).get("include_usage")
            return Response(
                200, event_stream(model, reply, calls, usage if include else None), "text/event-stream"
            )
        return Response(200, completion_body(model, reply, calls, usage))

    def _executor_reply(self, messages: list[dict[str, Any]]) -> ScriptedReply:
        query = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        task = self._task_in(query)
        if task is None:
            with self._lock:
                self.unknown_queries.append(query)
            return ScriptedReply(text=UNKNOWN_TASK_ACTION)
        actions = reference_actions(task)
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        return ScriptedReply(text=actions[min(turn, len(actions) - 1)])

    def _turn_reply(self, messages: list[dict[str, Any]]) -> ScriptedReply:
        last = messages[-1]
        if last.get("role") == "tool":
            report = str(last.get("content") or "").strip().splitlines()
            return ScriptedReply(text=f"Done. {report[0] if report else ''}".strip())
        task = self._task_in(str(last.get("content") or "")) if last.get("role") == "user" else None
        if task is None:
            return ScriptedReply(text="Noted.")
        arguments = json.dumps({"query": task.instruction})
        return ScriptedReply(tool_calls=(("terminal_task", arguments),))

    def _task_in(self, text: str) -> Task | None:
        with self._lock:
            if text in self._known:
                return self._known[text]
            return next((task for instruction, task in self._known.items() if instruction in text), None)

    def _call_id(self) -> str:
        with self._lock:
            self._calls += 1
            return f"call_{self._calls}"


def _is_executor_work(messages: list[dict[str, Any]]) -> bool:
    first = messages[0] if messages else {}
    return first.get("role") == "system" and str(first.get("content") or "").startswith(EXECUTOR_SYSTEM[:60])


def _prompt_text(messages: list[dict[str, Any]], tools: object) -> str:
    """What a chat model reads of a request: roles, contents, tool calls, and the tool schemas."""
    parts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):  # content parts
            content = "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
        parts.append(f"{message.get('role', '')}\n{content or ''}")
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            parts.append(f"{function.get('name', '')}({function.get('arguments', '')})")
    if tools:
        parts.append(json.dumps(tools))
    return "\n".join(parts)
