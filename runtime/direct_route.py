"""The direct route: a person's message of a kind the executor has mastered skips the planner.

Routing by measured competence (runtime/executor/routing.py) decides who does terminal work once
the planner has asked for it; the planner's own turn around it (reading the message, calling
`terminal_task`, reading the report, replying) still costs two large-model calls. When a whole
message is a close instance of a kind the executor takes (`Router.decide_direct`), the agent
hands it to the executor itself and replies with what the executor did: no planner call at all.
When the run does not complete (the model gave up, ran out of turns, or failed), the planner
takes the turn over with the attempt in its context, so the person never gets less than the
planner route would have given.

The turn is stored as the planner route would have stored it: an assistant message calling
`terminal_task` with the person's words as the query, the executor's report as the tool's
message, then the reply. Whichever route served it, the conversation in memory reads the same,
and a later planner turn sees what was done.

    run = await direct(request, context)    # TerminalExecutor.run_direct: None when not taken
    if run is not None and completed(run):
        reply = direct_reply(run)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from runtime.models import ToolCall
from runtime.tools import ToolContext, bound_text

if TYPE_CHECKING:
    from runtime.executor.loop import ExecutorRun

# The executor's run of a whole message on the direct route; None when it does not take it.
DirectRunner = Callable[[str, ToolContext], Coroutine[Any, Any, "ExecutorRun | None"]]

OUTPUT_CHARS = 1_500  # of each command's output in the reply


def direct_call(episode_id: int, request: str) -> ToolCall:
    """The `terminal_task` call the direct route stands for, as the planner would have made it."""
    return ToolCall(f"direct-{episode_id}", "terminal_task", json.dumps({"query": request}))


def completed(run: ExecutorRun) -> bool:
    """Whether the run may answer the person by itself: it finished the task cleanly."""
    return run.completed and run.parse_failures == 0 and run.timeouts == 0


def direct_reply(run: ExecutorRun) -> str:
    """The reply: the executor's own account, then each command it ran with its output."""
    parts = [run.answer.strip() or "Done."]
    for command, output in zip(run.commands, run.outputs, strict=False):
        shown, _ = bound_text(output.strip(), OUTPUT_CHARS)
        parts.append(f"$ {command.strip()}" + (f"\n{shown}" if shown else ""))
    return "\n\n".join(parts)
