"""Reading a shell command line into simple commands, closely enough for the policy.

This is not a shell parser; it reads the way /bin/sh would on the things that matter for
spotting a dangerous command, and guesses sensibly on the rest:

- quoting and escapes are removed as the shell removes them: `r''m`, `"rm"`, `\\rm` and
  `$'\\x72m'` all read `rm`;
- `;`, `&&`, `||`, `&`, newlines and `( )` end a command; `|` and `|&` join a pipeline;
- redirections (`>`, `>>`, `2>&1`, `&>`, `<`, `<<<`, here-documents) are kept apart from the
  words, with their targets; a here-document's body is its target;
- command and process substitutions (`$(...)`, backticks, `<(...)`, `>(...)`) stay in their word
  as written and are also listed, so that the caller reads them as commands of their own;
- a function definition (`name() { ...; }`) marks the commands of its body with its name.

Invariant: `parse` never raises; any text, however malformed (unbalanced quotes, a lone
`$(`), gives some list of commands.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_OPERATORS = ("&&", "||", "|&", ";;", "|", ";", "&", "(", ")")
_REDIRECTS = ("&>>", "<<<", "<<-", "&>", ">>", ">|", ">&", "<&", "<>", "<<", ">", "<")
_BREAKS = frozenset(" \t\r\n;&|()<>")  # characters that may end a word
_PLAIN_STOPS = _BREAKS | frozenset("'\"\\$`")
_KEYWORDS = frozenset(
    {
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "do",
        "done",
        "while",
        "until",
        "for",
        "in",
        "case",
        "esac",
        "!",
        "select",
    }
)
_OCTAL = frozenset("01234567")
_ANSI_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


@dataclass(frozen=True)
class Redirect:
    """`op` as written without its file descriptor (`>`, `>>`, `<`, `>&`, `<<`, ...); `target`
    is the file, the descriptor for `>&`, or the body of a here-document."""

    op: str
    target: str


@dataclass
class Command:
    """One simple command: its words (quotes removed) and where it reads and writes."""

    words: list[str] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    substitutions: list[str] = field(default_factory=list)  # inner text of $(..), `..`, <(..)
    function: str | None = None  # the function whose body holds this command
    pipeline: int = 0  # commands joined by | share a pipeline number
    stage: int = 0  # position in its pipeline
    piped_in: bool = False
    piped_out: bool = False
    background: bool = False


@dataclass
class _Token:
    kind: str  # "word", "op" or "redirect"
    text: str
    substitutions: list[str] = field(default_factory=list)
    target: str = ""  # a redirect's file, descriptor or here-document body


def parse(text: str) -> list[Command]:
    """The simple commands of `text`, in order."""
    return _Builder().build(_Lexer(text).tokens())


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.heredocs: list[tuple[_Token, str, bool]] = []  # (redirect token, delimiter, strip)

    def tokens(self) -> list[_Token]:
        out: list[_Token] = []
        text = self.text
        while self.i < len(text):
            char = text[self.i]
            if char in " \t\r":
                self.i += 1
            elif char == "\n":
                self.i += 1
                out.append(_Token("op", ";"))
                self._read_heredoc_bodies()
            elif char == "#":
                end = text.find("\n", self.i)
                self.i = len(text) if end < 0 else end
            elif self._at_redirect():
                out.append(self._redirect(out))
            elif self._at_operator():
                op = next(op for op in _OPERATORS if text.startswith(op, self.i))
                self.i += len(op)
                out.append(_Token("op", ";" if op == ";;" else op))
            else:
                out.append(self._word())
        return out

    def _at_operator(self) -> bool:
        if self.text[self.i] not in ";&|()":
            return False
        return any(self.text.startswith(op, self.i) for op in _OPERATORS)

    def _at_redirect(self) -> bool:
        if self.text[self.i] not in "<>&" or self.text.startswith(("<(", ">("), self.i):
            return False
        return any(self.text.startswith(op, self.i) for op in _REDIRECTS)

    def _redirect(self, out: list[_Token]) -> _Token:
        op = next(op for op in _REDIRECTS if self.text.startswith(op, self.i))
        # `2>file`: the digits touching the operator name a descriptor; `echo 2 >file` does not.
        touching = self.i > 0 and self.text[self.i - 1] not in " \t\n"
        self.i += len(op)
        while self.i < len(self.text) and self.text[self.i] in " \t":
            self.i += 1
        target = self._word() if self.i < len(self.text) else _Token("word", "")
        if touching and out and out[-1].kind == "word" and out[-1].text.isdigit():
            out.pop()
        token = _Token("redirect", op, target.substitutions, target.text)
        if op in ("<<", "<<-"):
            self.heredocs.append((token, target.text, op == "<<-"))
        return token

    def _read_heredoc_bodies(self) -> None:
        for token, delimiter, strip_tabs in self.heredocs:
            lines: list[str] = []
            while self.i < len(self.text):
                end = self.text.find("\n", self.i)
                end = len(self.text) if end < 0 else end
                line = self.text[self.i : end]
                self.i = end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
                lines.append(line)
            token.target = "\n".join(lines)
        self.heredocs.clear()

    def _word(self) -> _Token:
        text, parts, subs = self.text, [], []
        if text.startswith(("<(", ">("), self.i):
            end = _closing(text, self.i + 2)
            subs.append(text[self.i + 2 : end])
            parts.append(text[self.i : end + 1])
            self.i = end + 1
        while self.i < len(text):
            char = text[self.i]
            ends = char in " \t\r\n" or self._at_operator() or self._at_redirect()
            if char in _BREAKS and ends:
                break
            if char == "'":
                end = text.find("'", self.i + 1)
                end = len(text) if end < 0 else end
                parts.append(text[self.i + 1 : end])
                self.i = end + 1
            elif char == '"':
                self.i += 1
                parts.append(self._double_quoted(subs))
            elif text.startswith("$'", self.i):
                parts.append(self._ansi_quoted())
            elif char == "\\":
                if text.startswith("\\\n", self.i):
                    self.i += 2
                else:
                    parts.append(text[self.i + 1 : self.i + 2])
                    self.i += 2
            elif char == "$" or char == "`":
                parts.append(self._substitution(subs))
            else:
                end = self.i + 1
                while end < len(text) and text[end] not in _PLAIN_STOPS:
                    end += 1
                parts.append(text[self.i : end])
                self.i = end
        return _Token("word", "".join(parts), subs)

    def _double_quoted(self, subs: list[str]) -> str:
        text, parts = self.text, []
        while self.i < len(text) and text[self.i] != '"':
            char = text[self.i]
            if char == "\\" and text[self.i + 1 : self.i + 2] in ('"', "\\", "$", "`", "\n"):
                parts.append("" if text[self.i + 1] == "\n" else text[self.i + 1])
                self.i += 2
            elif char in "$`":
                parts.append(self._substitution(subs))
            else:
                parts.append(char)
                self.i += 1
        self.i += 1  # the closing quote (or past the end)
        return "".join(parts)

    def _ansi_quoted(self) -> str:
        text, parts = self.text, []
        self.i += 2
        while self.i < len(text) and text[self.i] != "'":
            if text[self.i] == "\\" and self.i + 1 < len(text):
                decoded, self.i = _ansi_escape(text, self.i + 1)
                parts.append(decoded)
            else:
                parts.append(text[self.i])
                self.i += 1
        self.i += 1
        return "".join(parts)

    def _substitution(self, subs: list[str]) -> str:
        """`$(..)`, `$((..))`, `${..}`, `$NAME` or a backtick pair, returned as written."""
        text, start = self.text, self.i
        if text[start] == "`":
            end = start + 1
            while end < len(text) and text[end] != "`":
                end += 2 if text[end] == "\\" else 1
            subs.append(text[start + 1 : end].replace("\\`", "`"))
            self.i = min(end + 1, len(text))
        elif text.startswith("$((", start):
            self.i = _closing(text, start + 3, double=True) + 2
            subs.append(text[start + 2 : self.i - 1])  # `$((cmd))` may be a subshell after all
        elif text.startswith("$(", start):
            end = _closing(text, start + 2)
            subs.append(text[start + 2 : end])
            self.i = end + 1
        elif text.startswith("${", start):
            end = text.find("}", start)
            self.i = len(text) if end < 0 else end + 1
        else:
            self.i += 1
        return text[start : self.i]


def _closing(text: str, i: int, *, double: bool = False) -> int:
    """The index of the `)` (or `))`) that closes a group opened just before `i`."""
    depth = 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == "'":
            end = text.find("'", i + 1)
            i = len(text) if end < 0 else end + 1
            continue
        if char == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            if depth == 0 and (not double or text.startswith("))", i)):
                return i
            depth = max(depth - 1, 0)
        i += 1
    return len(text)


def _ansi_escape(text: str, i: int) -> tuple[str, int]:
    """Decode the escape after a backslash at `i - 1`; return it and the index after it."""
    char = text[i]
    if char in _ANSI_ESCAPES:
        return _ANSI_ESCAPES[char], i + 1
    if char in "xuU":
        width = {"x": 2, "u": 4, "U": 8}[char]
        digits = ""
        while len(digits) < width and i + 1 + len(digits) < len(text):
            nxt = text[i + 1 + len(digits)]
            if nxt not in "0123456789abcdefABCDEF":
                break
            digits += nxt
        if digits:
            return chr(min(int(digits, 16), 0x10FFFF)), i + 1 + len(digits)
    if char in "01234567":
        digits = char
        while len(digits) < 3 and text[i + len(digits) : i + len(digits) + 1] in _OCTAL:
            digits += text[i + len(digits)]
        return chr(int(digits, 8)), i + len(digits)
    return "\\" + char, i + 1


class _Builder:
    """Groups tokens into commands, pipelines and function bodies."""

    def __init__(self) -> None:
        self.commands: list[Command] = []
        self.current = Command()
        self.pipeline = 0
        self.stage = 0
        self.braces = 0
        self.functions: list[tuple[str, int]] = []  # (name, brace depth of its body)
        self.pending_function: str | None = None

    def build(self, tokens: list[_Token]) -> list[Command]:
        i = 0
        while i < len(tokens):
            token = tokens[i]
            if token.kind == "word":
                self._word(token)
            elif token.kind == "redirect":
                self.current.redirects.append(Redirect(token.text, token.target))
                self.current.substitutions.extend(token.substitutions)
            elif token.text == "(" and self._is_function_header(tokens, i):
                self.pending_function = self.current.words.pop()
                if self.current.words == ["function"]:
                    self.current.words.clear()
                i += 1  # skip the ")"
            else:
                self._operator(token.text)
            i += 1
        self._finish()
        return self.commands

    def _is_function_header(self, tokens: list[_Token], i: int) -> bool:
        words = self.current.words
        return (
            len(words) in (1, 2)
            and (len(words) == 1 or words[0] == "function")
            and i + 1 < len(tokens)
            and tokens[i + 1].kind == "op"
            and tokens[i + 1].text == ")"
        )

    def _word(self, token: _Token) -> None:
        words = self.current.words
        at_start = not words and not self.current.redirects
        if at_start and token.text == "{" and not token.substitutions:
            self.braces += 1
            if self.pending_function is not None:
                self.functions.append((self.pending_function, self.braces))
                self.pending_function = None
            return
        if at_start and token.text == "}" and not token.substitutions:
            if self.functions and self.functions[-1][1] == self.braces:
                self.functions.pop()
            self.braces = max(self.braces - 1, 0)
            return
        if at_start and token.text in _KEYWORDS and not token.substitutions:
            return
        if words == ["function"] and self.pending_function is None:
            words.clear()
            self.pending_function = token.text
            return
        words.append(token.text)
        self.current.substitutions.extend(token.substitutions)

    def _operator(self, op: str) -> None:
        if op in ("|", "|&"):
            self.current.piped_out = True
            self._finish()
            self.stage += 1
            self.current.piped_in = True
            return
        if op == "&":
            self.current.background = True
            for command in reversed(self.commands):
                if command.pipeline != self.pipeline:
                    break
                command.background = True
        self._finish()
        self.pipeline += 1
        self.stage = 0

    def _finish(self) -> None:
        command = self.current
        if command.words or command.redirects:
            command.pipeline, command.stage = self.pipeline, self.stage
            command.function = self.functions[-1][0] if self.functions else None
            self.commands.append(command)
        self.current = Command()
