"""The executor's own loop: a small model does one piece of terminal work, turn by turn.

    query -> [model: action] -> run its commands in the sandbox -> [model: action] -> ...
          -> task_complete (or max_turns) -> a final answer for the planner

Each command goes through the same path as the planner's shell tool (runtime/tools/shell.py):
the command policy, the operator's approval when it asks, the sandbox. A reply that is not a
valid action gets one corrective message; a second invalid reply in a row ends the run. Every
model call is handed to `on_call` as it happens (the recorder stores it at token level), so a
run cut short still leaves its calls.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from runtime.executor import prompts
from runtime.executor.actions import ActionParseError, parse_action
from runtime.executor.completion import Completion, ExecutorBackend, SamplingParams
from runtime.tools import ToolContext, ToolError, bound_text, shell

TIMED_OUT_MARK = "[timed out after"
SERVING_TEMPERATURE = 0.7  # `[executor] temperature`'s default

# Called after every model call with its index, the Completion and the messages it was given.
CallSink = Callable[[int, Completion, list[dict[str, Any]]], Awaitable[None] | None]


@dataclass(frozen=True)
class ExecutorSettings:
    max_turns: int = 8
    default_timeout_s: float = 30.0
    observation_chars: int = 4_000  # per command: small models drown in long outputs
    sampling: SamplingParams = field(
        default_factory=lambda: SamplingParams(
            temperature=SERVING_TEMPERATURE, max_tokens=512, constrained=True
        )
    )


@dataclass
class ExecutorRun:
    """What one run did: its answer, the commands it ran, and what went wrong on the way."""

    answer: str = ""
    commands: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # each command's result as the model saw it, unbounded
    turns: int = 0
    parse_failures: int = 0
    timeouts: int = 0
    completed: bool = False
    calls: list[Completion] = field(default_factory=list)

    def report(self) -> str:
        """The final answer the planner gets: what was found, then what was run."""
        status = "" if self.completed else f"(stopped after {self.turns} turns without finishing) "
        ran = "\n".join(f"- {command}" for command in self.commands) or "- (nothing)"
        return f"{status}{self.answer}\n\nCommands run:\n{ran}"


async def run_executor(
    backend: ExecutorBackend,
    context: ToolContext,
    query: str,
    settings: ExecutorSettings,
    on_call: CallSink | None = None,
) -> ExecutorRun:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": prompts.SYSTEM},
        {"role": "user", "content": query},
    ]
    run = ExecutorRun()
    failed_last = False
    last_analysis = ""
    for _ in range(settings.max_turns):
        completion = await backend.complete(messages, settings.sampling)
        run.calls.append(completion)
        run.turns += 1
        if on_call is not None:
            stored = on_call(len(run.calls) - 1, completion, list(messages))
            if stored is not None:
                await stored
        messages.append({"role": "assistant", "content": completion.text})
        try:
            action = parse_action(completion.text, context.command_timeout(settings.default_timeout_s))
        except ActionParseError as error:
            run.parse_failures += 1
            if failed_last:
                run.answer = f"The executor gave up: its replies were not valid actions ({error})."
                return run
            failed_last = True
            messages.append({"role": "user", "content": prompts.CORRECTION.format(reason=error)})
            continue
        failed_last = False
        last_analysis = action.analysis
        observations = [
            await _run_command(context, c.keystrokes, c.timeout_s, settings, run) for c in action.commands
        ]
        if action.task_complete:
            run.answer, run.completed = action.analysis or "Done.", True
            return run
        messages.append({"role": "user", "content": "\n\n".join(observations)})
    run.answer = last_analysis or "The executor ran out of turns."
    return run


async def _run_command(
    context: ToolContext, keystrokes: str, timeout_s: float, settings: ExecutorSettings, run: ExecutorRun
) -> str:
    run.commands.append(keystrokes)
    try:
        output = await shell(context, keystrokes, max(1, math.ceil(timeout_s)))
    except ToolError as error:
        output = f"Error: {error}"
    run.outputs.append(output)
    if TIMED_OUT_MARK in output:
        run.timeouts += 1
    text, _ = bound_text(output, settings.observation_chars)
    return f"$ {keystrokes}\n{text}"
