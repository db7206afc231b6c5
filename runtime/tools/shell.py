"""The `shell` tool: one command in the sandbox, behind the dangerous-command policy.

Order of events: the policy assesses the command (with the sandbox's workdir, so absolute paths
into the workspace count as inside). "deny" is an error the model sees, and nothing runs.
"ask" runs only if the operator allowed it earlier in the session (its exact command, a pattern
matching it, or every rule it trips) or approves it now through `context.approve`; a decline
is an error the model sees. Then the command runs with its timeout, lowered to the context's
ceiling (`[sandbox] timeout_s`) when it asks for more, which the result says; a non-zero exit
or a timeout is part of the output, not an error, because the command did run.

The executor sub-agent (next) will do multi-step terminal work; this tool stays one command.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from runtime.policy import assess
from runtime.tools.context import ApprovalRequest, ToolContext
from runtime.tools.result import ToolError


async def shell(
    context: ToolContext, command: str, timeout_s: Annotated[int, Field(ge=1, le=600)] = 60
) -> str:
    """Run a /bin/sh command in the workspace."""
    sandbox = context.require_sandbox()
    if not command.strip():
        raise ToolError("the command is empty")
    unrunnable = _unrunnable(command)
    if unrunnable is not None:
        raise ToolError(unrunnable)
    verdict = assess(command, workdir=sandbox.workdir)
    if verdict.action == "deny":
        raise ToolError(
            f"refused by the command policy ({verdict.rule}): {verdict.reason}. "
            "It will not run; find another way or ask the user."
        )
    if verdict.action == "ask" and not context.preapproved(command, verdict):
        if not await context.approve(ApprovalRequest("shell", command, verdict)):
            raise ToolError(
                f"the operator declined to run this command ({verdict.reason}). "
                "Do not retry it; ask the user or do without."
            )
    limit_s = context.command_timeout(timeout_s)
    result = await sandbox.run(command, limit_s)
    if result.timed_out:
        status = f"[timed out after {limit_s:g} s; everything it started was stopped]"
    else:
        status = f"[exit {result.exit_code}]"
    if limit_s < timeout_s:
        status += f" [timeout lowered from {timeout_s:g} s to {limit_s:g} s, the per-command limit]"
    output = result.output.rstrip("\n")
    return f"{output}\n{status}" if output else f"{status} (no output)"


def _unrunnable(command: str) -> str | None:
    """Why no process can be given `command` as its argument, if so. A model's bytes decoded
    leniently can hold a lone surrogate, which an argv cannot carry (the exec would raise)."""
    if "\x00" in command:
        return "the command holds a NUL character, which no command line can carry"
    try:
        command.encode("utf-8")
    except UnicodeEncodeError as error:
        return f"the command holds a character that is not valid UTF-8 (at position {error.start}); write it in plain UTF-8"
    return None
