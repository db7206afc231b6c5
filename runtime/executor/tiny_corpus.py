"""The built-in text the tiny executor's tokenizer is trained on: terminal work, offline.

Shell commands, their output, and executor actions in the JSON shape the executor speaks
(`{"analysis", "commands": [{"keystrokes", "timeout"}], "task_complete"}`), so that a tokenizer
trained on it splits such text into few tokens.

Invariant: `corpus_lines()` is a pure function: the same lines in the same order on every call
and every machine (its own `random.Random(0)`, no clock, no files), so the tokenizer built from
it is the same everywhere.
"""

from __future__ import annotations

import json
import random

COMMANDS = (
    "ls",
    "ls -la",
    "ls -l",
    "pwd",
    "cd ..",
    "cat",
    "head -n 5",
    "tail -n 20",
    "wc -l",
    "grep -n",
    "grep -rn",
    "grep -c",
    "find . -name",
    "sed -n '1,10p'",
    "awk '{print $1}'",
    "sort",
    "sort -u",
    "uniq -c",
    "cut -d, -f1",
    "tr -d",
    "mkdir -p",
    "rm -f",
    "cp",
    "mv",
    "touch",
    "chmod +x",
    "echo",
    "printf",
    "python3",
    "python3 -c",
    "pip install",
    "git status",
    "git diff",
    "git log --oneline",
    "git add",
    "git commit -m",
    "tar -xzf",
    "tar -czf",
    "du -sh",
    "df -h",
    "ps aux",
    "which",
    "env",
    "export",
    "date",
    "diff",
    "xargs",
    "tee",
    "jq .",
    "curl -s",
    "make",
    "make test",
    "pytest -q",
    "npm test",
    "cargo build",
    "go test ./...",
)
FILES = (
    "data.csv",
    "README.md",
    "main.py",
    "app.py",
    "config.toml",
    "notes.txt",
    "output.log",
    "report.json",
    "setup.py",
    "requirements.txt",
    "Makefile",
    "index.html",
    "test_app.py",
    "server.go",
    "lib.rs",
    "package.json",
    "script.sh",
    "numbers.txt",
    "words.txt",
    "input.txt",
    "results.tsv",
    "users.db",
    "error.log",
    "Dockerfile",
    "pyproject.toml",
    "hello.c",
)
DIRS = (
    "src",
    "tests",
    "docs",
    "build",
    "data",
    "logs",
    "tmp",
    "/workspace",
    "/tmp",
    "scripts",
    "lib",
)
WORDS = (
    "error",
    "warning",
    "hello",
    "world",
    "TODO",
    "import",
    "def",
    "return",
    "main",
    "test",
    "failed",
    "passed",
    "count",
    "total",
    "name",
    "value",
    "user",
    "id",
    "status",
    "ok",
    "class",
    "self",
    "print",
    "config",
    "path",
    "file",
    "line",
    "lines",
    "number",
    "string",
    "list",
    "dict",
    "key",
    "server",
    "client",
    "request",
    "response",
    "timeout",
    "retry",
    "debug",
    "info",
    "version",
    "install",
    "package",
    "module",
    "function",
    "argument",
    "output",
    "input",
    "result",
    "results",
    "sum",
    "average",
    "maximum",
    "minimum",
    "length",
    "size",
    "directory",
    "folder",
    "archive",
    "backup",
    "permission",
    "denied",
    "found",
    "missing",
    "empty",
    "true",
    "false",
    "null",
    "none",
    "yes",
    "no",
    "start",
    "stop",
    "restart",
    "build",
    "deploy",
    "release",
    "branch",
    "commit",
    "merge",
    "origin",
    "remote",
    "local",
    "cache",
)
TASKS = (
    "Count the lines in {f}.",
    "Find every {w} in {d}.",
    "Create {d}/{f} with the text {w}.",
    "Show the first lines of {f}.",
    "Sort {f} and remove duplicates.",
    "Run the tests in {d}.",
    "Make {f} executable and run it.",
    "How big is {d}?",
    "Replace {w} with {v} in {f}.",
    "List the files in {d}, newest first.",
    "Sum the numbers in {f}.",
    "Fix the failing test.",
)
ANALYSES = (
    "I need to look at the files first.",
    "The file exists; now count its lines.",
    "The output shows {n} lines, so the task is done.",
    "The command failed: {f} is missing.",
    "I will create the directory, then write the file.",
    "The tests pass now.",
    "grep found {n} matches in {f}.",
    "Nothing left to do.",
    "I should check the exit code.",
    "Let me read {f} to see what it contains.",
    "The previous command printed an error.",
)
OUTPUTS = (
    "{n} {f}",
    "total {n}",
    "-rw-r--r-- 1 user user {n} Jan {m} 12:{m:02d} {f}",
    "drwxr-xr-x 2 user user 4096 Jan {m} 09:{m:02d} {d}",
    "{f}:{n}:{w}",
    "bash: {w}: command not found",
    "cat: {f}: No such file or directory",
    "{n} passed in 0.{m}s",
    "Traceback (most recent call last):",
    '  File "{f}", line {n}, in <module>',
    "NameError: name '{w}' is not defined",
    "$ ",
    "exit code {m}",
    "{w}={v}",
)


def corpus_lines(count: int = 6000) -> list[str]:
    """`count` pieces of terminal-ish text: tasks, commands, outputs and JSON actions."""
    rng = random.Random(0)
    lines: list[str] = []
    for index in range(count):
        slots: dict[str, str | int] = {
            "f": rng.choice(FILES),
            "d": rng.choice(DIRS),
            "w": rng.choice(WORDS),
            "v": rng.choice(WORDS),
            "n": rng.randrange(1000),
            "m": rng.randrange(1, 29),
        }
        kind = index % 4
        if kind == 0:
            lines.append(rng.choice(TASKS).format(**slots))
        elif kind == 1:
            lines.append(f"$ {_command(rng, slots)}\n" + rng.choice(OUTPUTS).format(**slots))
        elif kind == 2:
            lines.append(_action(rng, slots))
        else:
            lines.append(rng.choice(OUTPUTS).format(**slots) + "\n" + rng.choice(ANALYSES).format(**slots))
    return lines


def _command(rng: random.Random, slots: dict[str, str | int]) -> str:
    command = rng.choice(COMMANDS)
    target = rng.choice(
        (slots["f"], f"{slots['d']}/{slots['f']}", slots["d"], f"'{slots['w']}' {slots['f']}")
    )
    piped = f" | {rng.choice(COMMANDS)}" if rng.random() < 0.25 else ""
    return f"{command} {target}{piped}"


def _action(rng: random.Random, slots: dict[str, str | int]) -> str:
    commands = [
        {"keystrokes": _command(rng, slots) + "\n", "timeout": rng.choice((5, 10, 30))}
        for _ in range(rng.randrange(0, 3))
    ]
    action = {
        "analysis": rng.choice(ANALYSES).format(**slots),
        "commands": commands,
        "task_complete": not commands,
    }
    return json.dumps(action, indent=rng.choice((None, 2)))
