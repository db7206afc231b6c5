"""Rules for runaway processes: fork bombs (deny) and endless loops of background jobs (ask).

A shell fork bomb is a function that calls itself through a pipe or in the background
(`:(){ :|:& };:`, `bomb() { bomb | bomb & }; bomb`, `function f { f & f & }`), whatever its
name or spacing. Fork bombs written in another language are found in the text of every script
read (`perl -e 'fork while fork'`, `python -c 'while True: os.fork()'`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from runtime.policy.invocation import Script
from runtime.policy.rules import finding
from runtime.policy.verdict import Finding

_PROGRAM_BOMBS = (
    re.compile(r"\bfork\s*(\(\s*\))?\s*(while|until)\s*(fork|1|true)\b"),
    re.compile(r"\bwhile\s*\(?\s*(True|true|1)\s*\)?\s*:?\s*\{?\s*(os\.)?fork\s*\("),
    re.compile(r"\bfor\s*\(\s*;\s*;\s*\)\s*\{?\s*fork\s*\("),
    re.compile(r"\bloop\s*(\{|do)\s*fork\b"),
)
_ENDLESS_LOOP = re.compile(
    r"\b(while\s+(true|:|1|\[\s*1\s*\])|until\s+false)\s*;?\s*do\b(?P<body>.*?)\bdone\b", re.DOTALL
)
_BACKGROUND = re.compile(r"(?<![&>|])&(?![&>])")


def check(script: Script) -> Iterator[Finding]:
    for invocation in script.invocations:
        command = invocation.command
        recursive = command.function is not None and invocation.name == command.function
        if recursive and (command.piped_in or command.piped_out or command.background):
            yield finding(
                "fork-bomb",
                f"fork bomb: the function {command.function} keeps starting copies of itself",
            )
            return
    for text in script.texts:
        if any(pattern.search(text) for pattern in _PROGRAM_BOMBS):
            yield finding("fork-bomb", "fork bomb: a program that forks in an endless loop")
            return
        loop = _ENDLESS_LOOP.search(text)
        if loop and _BACKGROUND.search(loop.group("body")):
            yield finding("fork-loop", "starts background jobs in an endless loop")
