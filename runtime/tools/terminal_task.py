"""The `terminal_task` tool: multi-step terminal work, done by the executor sub-agent.

The planner describes the task once; the executor (runtime/executor) runs its own short loop
of commands in the workspace and returns what it found and what it ran. Its model calls are
recorded at token level for the learner.
"""

from __future__ import annotations

from runtime.tools.context import ToolContext
from runtime.tools.result import ToolError


async def terminal_task(context: ToolContext, query: str) -> str:
    """Have the executor do terminal work in the workspace; say fully what to do and report."""
    if not query.strip():
        raise ToolError("the query is empty: describe the terminal task")
    return await context.require_terminal()(query, context)
