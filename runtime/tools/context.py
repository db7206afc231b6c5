"""What tools get besides their arguments: `ToolContext`, built by the runtime for each call.

It carries the session's sandbox and the memory store, the user on whose behalf the tool runs
(memory search is always scoped to this user), the session, the ceiling of any command's
timeout (`[sandbox] timeout_s`: a command may ask for less, never more), and the operator's
say over commands: `approve(request) -> bool`, a callback the connector supplies (the CLI asks
y/n, a chat shows buttons), and the session's standing approvals. `allowed_rules` and
`allowed_commands` are sets the runtime keeps per session and passes to every context of that
session; an approver that hears "allow for this session" adds the request's rules (or its
command) to them.

Invariant: the default approver declines; a context built without one never runs a command the
policy wants a person to see.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from runtime.policy import Verdict
from runtime.tools.result import ToolSetupError

if TYPE_CHECKING:
    from memory import MemoryStore
    from runtime.sandbox import Sandbox


@dataclass(frozen=True)
class ApprovalRequest:
    """A command the policy wants the operator to approve before it runs."""

    tool: str
    command: str
    verdict: Verdict

    @property
    def reason(self) -> str:
        return self.verdict.reason

    @property
    def rule(self) -> str:
        return self.verdict.rule

    @property
    def rules(self) -> frozenset[str]:
        """Every rule behind the request: allowing "the rule" for a session means all of them."""
        return self.verdict.rules


Approver = Callable[[ApprovalRequest], Awaitable[bool]]

# Multi-step terminal work handed to the executor sub-agent (runtime/executor/terminal.py):
# `await terminal(query, context)` returns the executor's final report.
TerminalRunner = Callable[[str, "ToolContext"], Awaitable[str]]


async def decline_all(request: ApprovalRequest) -> bool:
    """The approver of a context nobody can be asked through: every request is declined."""
    return False


@dataclass(kw_only=True)
class ToolContext:
    user: str  # the user handle the tool acts for
    sandbox: Sandbox | None = None
    memory: MemoryStore | None = None
    session_id: int | None = None
    approve: Approver = decline_all
    allowed_rules: set[str] = field(default_factory=set)  # rules the operator allowed this session
    allowed_commands: set[str] = field(default_factory=set)  # commands or fnmatch patterns
    terminal: TerminalRunner | None = None  # the executor, for terminal_task
    command_timeout_s: float | None = None  # the most seconds any command may run; None: no ceiling
    episode_id: int | None = None  # the chat turn's episode: executor episodes are linked to it

    def command_timeout(self, asked_s: float) -> float:
        """The timeout a command that asks for `asked_s` gets: at most the ceiling."""
        if self.command_timeout_s is None:
            return asked_s
        return min(asked_s, self.command_timeout_s)

    def require_sandbox(self) -> Sandbox:
        if self.sandbox is None:
            raise ToolSetupError("this tool needs a sandbox, and the ToolContext has none")
        return self.sandbox

    def require_terminal(self) -> TerminalRunner:
        if self.terminal is None:
            raise ToolSetupError("terminal_task needs an executor, and the ToolContext has none")
        return self.terminal

    def require_memory(self) -> MemoryStore:
        if self.memory is None:
            raise ToolSetupError("this tool needs the memory store, and the ToolContext has none")
        return self.memory

    def preapproved(self, command: str, verdict: Verdict) -> bool:
        """Whether the operator already allowed this command, or every rule it trips, for the
        rest of the session."""
        text = command.strip()
        if any(text == allowed or fnmatchcase(text, allowed) for allowed in self.allowed_commands):
            return True
        return bool(verdict.rules) and verdict.rules <= self.allowed_rules

    def allow_for_session(self, request: ApprovalRequest, *, whole_rule: bool) -> None:
        """Remember an approval: the request's rules, or just its exact command."""
        if whole_rule:
            self.allowed_rules.update(request.rules)
        else:
            self.allowed_commands.add(request.command.strip())
