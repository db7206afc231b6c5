"""From simple commands to the programs a command line would actually run: `Invocation`s.

What is looked through, so that the rules see the real program and its arguments:

- wrappers that run another command: `sudo`, `doas`, `env`, `nice`, `nohup`, `timeout 5`,
  `xargs`, `exec`, `command`, `stdbuf`, `setsid`, `flock FILE`, `chroot DIR`, `busybox`, ...;
- leading assignments (`X=1 cmd`), and assignments and `export`s earlier in the line, whose
  values are substituted when a path is placed (`D=/; rm -rf $D`);
- scripts inside scripts: `sh -c '...'` (any shell, any `-xc` cluster), `eval`, `su -c`,
  `env -S`, `watch '...'`, here-documents and here-strings fed to a shell, `echo '...' | sh`,
  command and process substitutions, and commands embedded in `python -c`/`perl -e`/`node -e`
  programs (embedded.py), each read as commands of their own;
- `cd` and `pushd`, so that `cd / && rm -rf *` places `*` under `/`;
- absolute or relative paths to programs (`/bin/rm`, `./rm` is still `rm`).

Invariants: reading never raises; nesting deeper than MAX_DEPTH, or text longer than
MAX_CHARS, is not read but reported in `Script.unreadable`, so the caller can ask, not guess.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from runtime.policy.embedded import embedded_commands
from runtime.policy.paths import HOME, UNKNOWN_CWD, Location, Place, expand, locate
from runtime.policy.shell_syntax import Command, parse

MAX_DEPTH = 6
MAX_CHARS = 100_000
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "csh", "tcsh"})
_INTERPRETER = re.compile(r"^(python[\d.]*|pypy[\d.]*|perl[\d.]*|ruby|node|nodejs|php|lua)$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*(\[[^\]]*\])?\+?=")
_ECHOES = frozenset({"echo", "printf"})
_WATCH_VALUES = frozenset({"-n", "--interval", "-q", "--equexit"})

# wrapper -> (its options that take a value, how many operands come before the command)
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (
        frozenset(
            "-u -g -h -p -C -D -r -t -U -T --user --group --host --prompt --chdir "
            "--role --type --other-user --close-from".split()
        ),
        0,
    ),
    "doas": (frozenset({"-u", "-C"}), 0),
    "env": (frozenset({"-u", "--unset", "-C", "--chdir"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "-n", "--class", "--classdata"}), 0),
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-f", "-o", "--format", "--output"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "taskset": (frozenset(), 1),
    "chrt": (frozenset(), 1),
    "flock": (frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}), 1),
    "chroot": (frozenset({"--userspec", "--groups"}), 1),
    "setsid": (frozenset(), 0),
    "unbuffer": (frozenset(), 0),
    "busybox": (frozenset(), 0),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "sshpass": (frozenset({"-p", "-f", "-d"}), 0),
    "strace": (frozenset({"-o", "-e", "-p", "-s", "-u", "-E", "-O", "-S", "-P"}), 0),
    "ltrace": (frozenset({"-o", "-e", "-p", "-s", "-u"}), 0),
    "xargs": (
        frozenset(
            "-I -n -P -d -L -s -a -E --max-args --max-procs --delimiter --arg-file "
            "--max-lines --max-chars --replace".split()
        ),
        0,
    ),
}


@dataclass(frozen=True)
class Invocation:
    """One program a command line runs, with everything the rules need to judge it."""

    name: str  # the program's base name ("rm" for /bin/rm); "" for a bare redirection
    args: tuple[str, ...]
    command: Command  # the syntax it came from: redirects, pipes, function, substitutions
    script: int  # which (nested) script it belongs to; pipelines are numbered per script
    cwd: str | None
    env: dict[str, str]
    workdir: str | None

    def locate(self, word: str) -> Location:
        return locate(word, cwd=self.cwd, workdir=self.workdir, env=self.env)

    def expand(self, word: str) -> str:
        return expand(word, self.env)

    def operands(self, value_options: frozenset[str] = frozenset()) -> list[str]:
        """The arguments that are not options (or values of `value_options`); all after `--`."""
        found: list[str] = []
        i = 0
        while i < len(self.args):
            arg = self.args[i]
            if arg == "--":
                found.extend(self.args[i + 1 :])
                break
            if arg.startswith("-") and len(arg) > 1:
                i += 2 if arg in value_options else 1
                continue
            found.append(arg)
            i += 1
        return found

    def has_option(self, *names: str, letters: str = "") -> bool:
        """Whether any of the long or exact `names`, or a short cluster holding one of
        `letters` (`-rf` holds r), is given before `--`."""
        for arg in self.args:
            if arg == "--":
                return False
            if arg in names or arg.split("=", 1)[0] in names:
                return True
            if letters and re.fullmatch(r"-[a-zA-Z]+", arg) and set(arg[1:]) & set(letters):
                return True
        return False

    def option_values(self, *names: str) -> list[str]:
        """The values of the options `names`: `-o X`, `--output X`, `--output=X`, `-oX`."""
        values: list[str] = []
        for i, arg in enumerate(self.args):
            for name in names:
                if arg == name and i + 1 < len(self.args):
                    values.append(self.args[i + 1])
                elif name.startswith("--") and arg.startswith(name + "="):
                    values.append(arg[len(name) + 1 :])
                elif (
                    len(name) == 2
                    and not name.startswith("--")
                    and arg.startswith(name)
                    and (len(arg) > 2 and not arg.startswith("--"))
                ):
                    values.append(arg[2:])
        return values

    def writes_to(self) -> list[str]:
        """The files its redirections write (`>`, `>>`, `&>`, `<>`, `>&FILE`)."""
        return [
            redirect.target
            for redirect in self.command.redirects
            if redirect.op in (">", ">>", ">|", "&>", "&>>", "<>")
            or (redirect.op == ">&" and not re.fullmatch(r"\d+-?|-", redirect.target))
        ]

    def reads_from(self) -> list[str]:
        """The files its redirections read (`<`, `<>`)."""
        return [r.target for r in self.command.redirects if r.op in ("<", "<>")]


@dataclass
class Script:
    """Everything a command line would run, in order, and the texts of its nested scripts."""

    invocations: list[Invocation] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    unreadable: str | None = None  # why part of the line was not read
    _pipelines: dict[tuple[int, int], list[Invocation]] = field(default_factory=dict, repr=False)

    def add(self, invocation: Invocation) -> None:
        self.invocations.append(invocation)
        key = (invocation.script, invocation.command.pipeline)
        self._pipelines.setdefault(key, []).append(invocation)

    def pipeline(self, invocation: Invocation) -> list[Invocation]:
        """The stages of the pipeline `invocation` is part of, in order."""
        return list(self._pipelines[(invocation.script, invocation.command.pipeline)])


def read_script(text: str, *, workdir: str | None = None) -> Script:
    """Every program `text` would run, looking through wrappers and nested scripts."""
    reader = _Reader(workdir)
    reader.read(text, 0)
    return reader.script


def shell_script_argument(args: tuple[str, ...]) -> tuple[str | None, bool]:
    """For a shell's arguments: the `-c` script if there is one, and whether it reads stdin."""
    expects_value = False
    takes_script = False
    for arg in args:
        if expects_value:
            expects_value = False
            continue
        if takes_script and not arg.startswith("-"):
            return arg, False
        if arg in ("-o", "+o", "-O", "+O"):
            expects_value = True
        elif arg == "-s":
            return None, True
        elif re.fullmatch(r"[-+][a-zA-Z]+", arg):
            takes_script = takes_script or "c" in arg
        elif arg == "--" or not arg.startswith("-"):
            return None, arg == "-"
    return None, not takes_script


def reads_stdin(invocation: Invocation) -> bool:
    """Whether a shell or interpreter runs the program it reads from standard input."""
    if invocation.name in SHELLS:
        return shell_script_argument(invocation.args)[1]
    if _INTERPRETER.match(invocation.name):
        operands = [arg for arg in invocation.args if not arg.startswith("-") or arg == "-"]
        flags = {arg for arg in invocation.args if arg.startswith("-")}
        return not (flags & {"-c", "-e", "-m", "-E", "-r", "--eval"}) and operands in ([], ["-"])
    return False


def is_interpreter(name: str) -> bool:
    return name in SHELLS or _INTERPRETER.match(name) is not None


class _Reader:
    def __init__(self, workdir: str | None) -> None:
        self.workdir = workdir
        self.script = Script()
        self.cwd: str | None = None
        self.env: dict[str, str] = {}
        self.scripts = 0

    def read(self, text: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            self.script.unreadable = f"it nests scripts more than {MAX_DEPTH} levels deep"
            return
        if len(text) > MAX_CHARS:
            self.script.unreadable = f"it is longer than {MAX_CHARS:,} characters"
            return
        self.script.texts.append(text)
        script_id = self.scripts
        self.scripts += 1
        for command in parse(text):
            for inner in command.substitutions:
                self.read(inner, depth + 1)
            self._command(command, script_id, depth)

    def _command(self, command: Command, script_id: int, depth: int) -> None:
        words = list(command.words)
        assignments = 0
        while assignments < len(words) and _ASSIGNMENT.match(words[assignments]):
            assignments += 1
        if assignments == len(words) and not command.redirects:
            self._assign(words)
            return
        program = self._unwrap(words[assignments:], depth)
        if program is None:
            return
        name = posixpath.basename(program[0]) if program else ""
        invocation = Invocation(
            name, tuple(program[1:]), command, script_id, self.cwd, dict(self.env), self.workdir
        )
        self.script.add(invocation)
        self._follow(invocation, depth)

    def _assign(self, words: list[str]) -> None:
        for word in words:
            name, _, value = word.partition("=")
            self.env[name.rstrip("+")] = expand(value, self.env)

    def _unwrap(self, words: list[str], depth: int) -> list[str] | None:
        """The command a chain of wrappers runs; None when it runs nothing we can see."""
        for _ in range(8):
            if not words:
                return words
            name = posixpath.basename(words[0])
            if name == "command" and any(w in ("-v", "-V") for w in words[1:2]):
                return None  # `command -v rm` looks a program up; it runs nothing
            if name == "env" and ("-S" in words or "--split-string" in words):
                at = max(words.index(flag) for flag in ("-S", "--split-string") if flag in words)
                self.read(" ".join(words[at + 1 :]), depth + 1)
                return None
            if name == "watch":
                self.read(" ".join(_after_options(words, _WATCH_VALUES)), depth + 1)
                return None
            if name not in _WRAPPERS:
                return words
            words = _after_wrapper(name, words)
        return words

    def _follow(self, invocation: Invocation, depth: int) -> None:
        """Read the scripts `invocation` runs, and track `cd`, `export`."""
        name, args, command = invocation.name, invocation.args, invocation.command
        if name in SHELLS:
            script, from_stdin = shell_script_argument(args)
            if script is not None:
                self.read(script, depth + 1)
            elif from_stdin:
                for redirect in command.redirects:
                    if redirect.op in ("<<", "<<-", "<<<"):
                        self.read(redirect.target, depth + 1)
                feeder = self._previous_stage(invocation)
                if feeder is not None and feeder.name in _ECHOES:
                    operands = [a for a in feeder.args if not re.fullmatch(r"-[neE]+", a)]
                    self.read(" ".join(operands).replace("\\n", "\n"), depth + 1)
        elif _INTERPRETER.match(name):
            for code in self._program_text(invocation):
                for embedded in embedded_commands(code):
                    self.read(embedded, depth + 1)
        elif name == "eval":
            self.read(" ".join(args), depth + 1)
        elif name in ("su", "runuser") and "-c" in args[:-1]:
            self.read(args[args.index("-c") + 1], depth + 1)
        elif name in ("cd", "pushd"):
            self.cwd = self._directory(invocation)
        elif name in ("export", "declare", "typeset", "local", "readonly"):
            self._assign([arg for arg in args if _ASSIGNMENT.match(arg)])

    def _program_text(self, invocation: Invocation) -> list[str]:
        """The code an interpreter runs from its command line or standard input."""
        code = invocation.option_values("-c", "-e", "-E", "--eval", "-r")
        if reads_stdin(invocation):
            heredocs = ("<<", "<<-", "<<<")
            code += [r.target for r in invocation.command.redirects if r.op in heredocs]
        return code

    def _previous_stage(self, invocation: Invocation) -> Invocation | None:
        if not invocation.command.piped_in:
            return None
        stages = self.script.pipeline(invocation)
        return stages[-2] if len(stages) >= 2 else None

    def _directory(self, invocation: Invocation) -> str | None:
        operands = [arg for arg in invocation.args if not arg.startswith("-") or arg == "-"]
        if not operands:
            return HOME
        if operands[0] == "-":
            return UNKNOWN_CWD
        location = invocation.locate(operands[0])
        if location.place is Place.WORKSPACE:
            return None
        if location.place is Place.UNKNOWN or not location.path.startswith("/"):
            return UNKNOWN_CWD
        return location.path


def _after_options(words: list[str], value_options: frozenset[str]) -> list[str]:
    i = 1
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in value_options else 1
    return words[i:]


def _after_wrapper(name: str, words: list[str]) -> list[str]:
    value_options, operands = _WRAPPERS[name]
    i = 1
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if word.startswith("-") and len(word) > 1:
            i += 2 if word in value_options else 1
        elif name in ("env", "sudo", "doas") and _ASSIGNMENT.match(word):
            i += 1
        else:
            break
    return words[i + operands :]
