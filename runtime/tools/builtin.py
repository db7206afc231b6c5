"""The tools every temper agent has, in the order their schemas enter the prompt."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime.tools.memory_search import search_memory
from runtime.tools.shell import shell
from runtime.tools.terminal_task import terminal_task
from runtime.tools.toolbox import DEFAULT_MAX_OUTPUT_CHARS, Toolbox
from runtime.tools.workspace_files import list_files, read_file, write_file

WORKSPACE_TOOLS: tuple[Callable[..., Any], ...] = (search_memory, list_files, read_file, write_file)
BUILTIN_TOOLS: tuple[Callable[..., Any], ...] = (*WORKSPACE_TOOLS, shell)


def builtin_toolbox(*, max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS, executor: bool = False) -> Toolbox:
    """A toolbox with the built-in tools: memory search, the file tools, and for terminal work
    either the one-command shell or, with `executor`, terminal_task (the executor sub-agent)."""
    terminal = terminal_task if executor else shell
    return Toolbox((*WORKSPACE_TOOLS, terminal), max_output_chars=max_output_chars)
