"""The executor's action format (the shape terminal-bench's Terminus agent uses), and its parser.

Each executor turn is one JSON object:

    {"analysis": "what I see and plan", "commands": [{"keystrokes": "ls -la\\n", "timeout": 10}],
     "task_complete": false}

`keystrokes` is run as one shell command in the workspace (a trailing newline is the Enter
key and is dropped); there is no interactive terminal behind it. The parser forgives what
small models do (a ```json fence, text around the object, a missing `commands` when the task
is complete) and rejects the rest with a reason the model can act on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

MAX_COMMANDS_PER_TURN = 8
MAX_COMMAND_TIMEOUT_S = 600


class ActionParseError(ValueError):
    """An executor reply that is not a valid action; the message says what is wrong."""


@dataclass(frozen=True)
class Command:
    keystrokes: str
    timeout_s: float


@dataclass(frozen=True)
class Action:
    analysis: str
    commands: tuple[Command, ...]
    task_complete: bool


def parse_action(text: str, default_timeout_s: float = 30.0) -> Action:
    raw = _json_object(text)
    if not isinstance(raw, dict):
        raise ActionParseError("the reply must be one JSON object")
    analysis = raw.get("analysis", "")
    if not isinstance(analysis, str):
        raise ActionParseError('"analysis" must be a string')
    complete = raw.get("task_complete", False)
    if not isinstance(complete, bool):
        raise ActionParseError('"task_complete" must be true or false')
    commands_raw = raw.get("commands", [])
    if not isinstance(commands_raw, list):
        raise ActionParseError('"commands" must be a list of {"keystrokes", "timeout"} objects')
    if len(commands_raw) > MAX_COMMANDS_PER_TURN:
        raise ActionParseError(f"at most {MAX_COMMANDS_PER_TURN} commands per turn")
    commands = tuple(_command(item, default_timeout_s) for item in commands_raw)
    if not commands and not complete:
        raise ActionParseError('give at least one command, or set "task_complete": true')
    return Action(analysis, commands, complete)


def _command(item: object, default_timeout_s: float) -> Command:
    if not isinstance(item, dict) or not isinstance(item.get("keystrokes"), str):
        raise ActionParseError('each command must be {"keystrokes": "...", "timeout": seconds}')
    keystrokes = item["keystrokes"].rstrip("\n")
    if not keystrokes.strip():
        raise ActionParseError("a command's keystrokes are empty")
    timeout = item.get("timeout", default_timeout_s)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ActionParseError('"timeout" must be a positive number of seconds')
    return Command(keystrokes, float(min(timeout, MAX_COMMAND_TIMEOUT_S)))


def _json_object(text: str) -> object:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise ActionParseError("no JSON object found in the reply")
    try:
        value = json.loads(text[start : end + 1])
    except json.JSONDecodeError as error:
        raise ActionParseError(f"invalid JSON: {error.msg} at character {error.pos}") from None
    try:  # JSON lets a \u escape name half of a UTF-16 pair, which is no text to run or show
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ActionParseError(
            "a \\u escape names half of a character (a lone surrogate): write the character itself"
        ) from None
    return value
