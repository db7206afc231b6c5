"""The terminal side of `temper chat`: how a turn is shown (`Renderer`: the reply streamed as it
arrives, every other event as one short line) and how lines are read (`Terminal`).

    hello, what is in here?
      → shell: ls -la
      ← total 8 (+5 lines)
    Two files: notes.txt and run.sh.
      · score 0.75 (judge): listed the directory as asked

Three streams: `out` gets the reply, `info` the tool, approval and score lines, `err` failures.
The interactive chat passes stdout for both `out` and `info`; the one-shot mode passes stderr
as `info`, so that stdout holds the reply and nothing else. Colour only goes to a terminal:
in a pipe, a test or a log, every line is plain text.

Approvals are asked in connectors/cli/chat.py; this module words them and reads the answer.

`Terminal` reads with readline (line editing, a history file) when both ends are a terminal,
and plain lines otherwise, so that a script can drive the chat through stdin. A message may span
lines: a line ending in a backslash continues, and a line of three double quotes opens a block
that the next such line closes.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TextIO

import typer

from runtime import (
    ApprovalRequested,
    Evaluated,
    Event,
    ModelCalled,
    Replied,
    ReplyDelta,
    ToolCalled,
    ToolReturned,
    TurnFailed,
    TurnStarted,
)

LINE_CHARS = 100  # a tool line is cut to this many characters
APPROVAL_CHOICES = "allow? [y]es / [n]o / [a]lways this session: "
PROMPT, MORE = "> ", ". "  # plain: readline miscounts a prompt's width when it holds colour codes
BLOCK = '"""'
HISTORY_LINES = 2000


class Renderer:
    """Writes one turn's events; `stream_reply` False prints the reply whole at the end."""

    def __init__(self, out: TextIO, info: TextIO, err: TextIO, *, stream_reply: bool = True) -> None:
        self.out, self.info, self.err = out, info, err
        self.stream_reply = stream_reply
        self._open_line: TextIO | None = None  # a stream whose last line has no newline yet
        self._call_text = ""  # what the planner streamed since its last ModelCalled
        self._last_call_text = ""

    # --- events --------------------------------------------------------------------------------

    def show(self, event: Event) -> None:
        match event:
            case TurnStarted():
                self._call_text = self._last_call_text = ""  # a cancelled turn may have left some
            case ReplyDelta(text=text):
                self._call_text += text
                if self.stream_reply and text:
                    self._write(self.out, text)
            case ModelCalled():
                self._last_call_text, self._call_text = self._call_text, ""
            case ToolCalled(name=name, arguments=arguments):
                self.line(self.info, f"  → {name}: {describe_arguments(arguments)}", dim=True)
            case ToolReturned(text=text, is_error=True):
                self.line(self.info, f"  ✗ {shorten(text)}", colour=typer.colors.RED)
            case ToolReturned(text=text):
                self.line(self.info, f"  ← {summarise_output(text)}", dim=True)
            case Replied(text=text):
                self._end_reply(text)
            case TurnFailed(error=error):
                self.failure(error)
            case Evaluated(reward=reward, source=source, reason=reason) if reward is not None:
                self.line(self.info, f"  · score {reward:.2f} ({source}): {shorten(reason)}", dim=True)
            case _:
                pass  # an unscored Evaluated: nothing worth a line

    def _end_reply(self, text: str) -> None:
        """Finish the reply's line, or print the reply whole when it was not streamed (one-shot
        into a pipe; or the reply is the loop's own, e.g. "I stopped after N rounds")."""
        streamed = self.stream_reply and self._last_call_text.strip() == text.strip()
        if not streamed and text:
            self._finish_line()
            self._write(self.out, text)
        self._finish_line()
        self._last_call_text = self._call_text = ""

    # --- approvals -----------------------------------------------------------------------------

    def approval_question(self, event: ApprovalRequested) -> str:
        """Shows the command and the reason; returns the question to ask."""
        self.line(self.info, f"  ? approve: {event.command}", colour=typer.colors.YELLOW)
        self.line(self.info, f"    reason: {event.reason}" if event.reason else "", dim=True)
        return "  " + APPROVAL_CHOICES

    def approval_answer(self, approved: bool, remember: bool, why: str = "") -> None:
        if approved:
            text = "  ✓ allowed" + (" for the rest of this session" if remember else "")
        else:
            text = "  ✗ declined"
        colour = None if approved else typer.colors.YELLOW
        self.line(self.info, text + (f" ({why})" if why else ""), dim=approved, colour=colour)

    # --- plain lines ---------------------------------------------------------------------------

    def note(self, text: str, stream: TextIO | None = None) -> None:
        self.line(stream or self.info, text, dim=True)

    def cancelled(self) -> None:
        """After Ctrl-C stopped a turn: the terminal echoed ^C where the cursor was."""
        if self.err.isatty():
            self._open_line = None
            self._write(self.err, "\n")
        self.failure("cancelled")

    def failure(self, text: str) -> None:
        self.line(self.err, f"✗ {text}", colour=typer.colors.RED)

    def line(self, stream: TextIO, text: str, *, dim: bool = False, colour: str | None = None) -> None:
        if not text:
            return
        self._finish_line()
        if stream.isatty() and (dim or colour):
            text = typer.style(text, fg=colour, dim=dim)
        self._write(stream, text + "\n")

    def _write(self, stream: TextIO, text: str) -> None:
        stream.write(text)
        stream.flush()
        self._open_line = stream if not text.endswith("\n") else None

    def _finish_line(self) -> None:
        if self._open_line is not None:
            self._write(self._open_line, "\n")


def describe_arguments(arguments: str) -> str:
    """A tool call's arguments in a few words: the command or path alone when there is one."""
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError:
        return shorten(arguments)
    if not isinstance(parsed, dict):
        return shorten(arguments)
    for key in ("command", "query", "path"):
        if isinstance(parsed.get(key), str):
            return shorten(parsed[key])
    if len(parsed) == 1:
        [value] = parsed.values()
        return shorten(value if isinstance(value, str) else json.dumps(value))
    return shorten(" ".join(f"{key}={json.dumps(value)}" for key, value in parsed.items()))


def summarise_output(text: str) -> str:
    """The first line of a tool's output, how many more there are, and the shell's exit status."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return "(no output)"
    first, rest = lines[0], len(lines) - 1
    status = lines[-1] if rest and lines[-1].startswith("[") and lines[-1].endswith("]") else ""
    if status:
        rest -= 1
    more = f" (+{rest} line{'s' if rest != 1 else ''})" if rest else ""
    return shorten(first) + more + (f" {status}" if status else "")


def shorten(text: str, limit: int = LINE_CHARS) -> str:
    """One line of at most `limit` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class Terminal:
    """What the person types; see the module docstring."""

    def __init__(self, stdin: TextIO, stdout: TextIO) -> None:
        self.stdin, self.stdout = stdin, stdout
        self.interactive = stdin.isatty() and stdout.isatty()
        self._history: Path | None = None

    def read_message(self) -> str | None:
        """The next message or /command, its lines joined; None at the end of input."""
        line = self.read_line(PROMPT)
        if line is None:
            return None
        if line.strip() == BLOCK:
            block: list[str] = []
            while (line := self.read_line(MORE)) is not None and line.strip() != BLOCK:
                block.append(line)
            return "\n".join(block)
        lines = []
        while line is not None and line.endswith("\\"):
            lines.append(line[:-1])
            line = self.read_line(MORE)
        lines.append(line or "")
        return "\n".join(lines)

    def ask(self, question: str) -> str | None:
        """One answer; the question is shown only where a person reads it."""
        if not self.interactive and self.stdin.isatty():
            sys.stderr.write(question)
            sys.stderr.flush()
        answer = self.read_line(question)
        if self._history is not None and answer:  # a y or an n is not worth recalling
            import readline

            readline.remove_history_item(readline.get_current_history_length() - 1)
        return answer

    def read_line(self, prompt: str) -> str | None:
        if self.interactive:
            try:
                return input(prompt)  # readline: editing and history
            except EOFError:
                return None
        line = self.stdin.readline()
        return line.rstrip("\r\n") if line else None

    def cleared(self) -> None:
        """After Ctrl-C or Ctrl-D at the prompt: the next prompt starts on a line of its own."""
        if self.interactive:
            self.stdout.write("\n")
            self.stdout.flush()

    def open_history(self, path: Path) -> None:
        if not self.interactive:
            return
        try:
            import readline
        except ImportError:  # Python built without it: input still works, without history
            return
        self._history = path
        readline.set_history_length(HISTORY_LINES)
        try:
            readline.read_history_file(path)
        except OSError:
            pass  # none yet, or unreadable: start a new one

    def save_history(self) -> None:
        if self._history is None:
            return
        import readline

        try:
            self._history.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(self._history)
            os.chmod(self._history, 0o600)  # what people type can be private
        except OSError:
            pass  # a history that cannot be saved is not worth failing the exit for
