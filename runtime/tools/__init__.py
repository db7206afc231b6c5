"""Tools: typed Python functions the planner calls, with schemas generated from their
signatures, arguments validated before they run, and failures returned as data.

- `Toolbox(tools)`: `schemas()`, `schema_json()`, `await call(name, arguments_json, context)`
  -> `ToolResult(text, is_error, duration_s, elided_chars)`; output bounded, head and tail kept.
- `ToolContext`: the sandbox, the memory store, the user, the session, the operator's
  `approve(ApprovalRequest) -> bool` and the session's standing approvals.
- Built in (`builtin_toolbox()`): search_memory, remember, forget_fact, profile, list_files,
  read_file, write_file, shell; with a skill catalog, skills_search, skill_view, skill_manage.
  The shell runs behind the command policy (runtime.policy); the file tools stay inside the
  workspace.

A tool raises `ToolError` for what the model should see ("Error: ..."); anything else it raises
is a bug or an infrastructure failure and propagates.
"""

from runtime.tools.builtin import BUILTIN_TOOLS, builtin_toolbox
from runtime.tools.context import ApprovalRequest, Approver, TerminalRunner, ToolContext, decline_all
from runtime.tools.memory_search import search_memory
from runtime.tools.profile_tools import forget_fact, profile, remember
from runtime.tools.result import ToolError, ToolResult, ToolSetupError, bound_text
from runtime.tools.shell import shell
from runtime.tools.signature import Tool, tool
from runtime.tools.skills_tools import skill_tools
from runtime.tools.terminal_task import terminal_task
from runtime.tools.toolbox import DEFAULT_MAX_OUTPUT_CHARS, Toolbox
from runtime.tools.workspace_files import list_files, read_file, write_file

__all__ = [
    "BUILTIN_TOOLS",
    "DEFAULT_MAX_OUTPUT_CHARS",
    "ApprovalRequest",
    "Approver",
    "TerminalRunner",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "ToolSetupError",
    "Toolbox",
    "bound_text",
    "builtin_toolbox",
    "decline_all",
    "forget_fact",
    "list_files",
    "profile",
    "read_file",
    "remember",
    "search_memory",
    "shell",
    "skill_tools",
    "terminal_task",
    "tool",
    "write_file",
]
