"""The tools every temper agent has, in the order their schemas enter the prompt."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runtime.tools.memory_search import search_memory
from runtime.tools.profile_tools import forget_fact, profile, remember
from runtime.tools.shell import shell
from runtime.tools.skills_tools import skill_tools
from runtime.tools.terminal_task import terminal_task
from runtime.tools.toolbox import DEFAULT_MAX_OUTPUT_CHARS, Toolbox
from runtime.tools.workspace_files import list_files, read_file, write_file

if TYPE_CHECKING:
    from runtime.skill_catalog import SkillCatalog

WORKSPACE_TOOLS: tuple[Callable[..., Any], ...] = (
    search_memory, remember, forget_fact, profile, list_files, read_file, write_file,
)  # fmt: skip
BUILTIN_TOOLS: tuple[Callable[..., Any], ...] = (*WORKSPACE_TOOLS, shell)


def builtin_toolbox(
    *,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    executor: bool = False,
    skills: SkillCatalog | None = None,
) -> Toolbox:
    """A toolbox with the built-in tools: memory search, the profile tools, the file tools, and
    for terminal work either the one-command shell or, with `executor`, terminal_task (the
    executor sub-agent); with `skills`, the skill tools on that catalog (skills_tools.py)."""
    terminal = terminal_task if executor else shell
    skill_set = skill_tools(skills) if skills is not None else ()
    return Toolbox((*WORKSPACE_TOOLS, *skill_set, terminal), max_output_chars=max_output_chars)
