"""Writing a task scored by its reference outcome as a Harbor / terminal-bench 2 folder.

    ep12/
      instruction.md       the episode's instruction (+ where to write the answer, when it has one)
      task.toml            category "episode", the source episode, split, timeouts
      environment/         the start workspace (executable bits kept), plus a Dockerfile
                           (FROM ubuntu:24.04, WORKDIR /app, COPY . /app/) and a .dockerignore
                           that keeps both out of the image
      solution/solve.sh    the reference commands, each run as `sh -c` in the working directory
      tests/test.sh        the outcome check: exit 0 when the outcome is reproduced; or the
                           task's planner-written check when it has one (written_verifier.py),
                           in tests/check.sh, followed by the answer check when there is an answer

tests/test.sh checks, in the working directory, that every path (ignored names as in
outcome.py; `tests/` and the answer file aside) is exactly the reference's end state: the same
files with the same sha256 and executable bit, the same symlinks and directories, deleted paths
absent, nothing else. A verifier sees only the file system, so a task whose reference printed
an answer asks for it in `answer.txt` (`ANSWER_FILE`): the instruction says so, solve.sh
writes there the output of the last reference command that printed something, and test.sh
normalises the file as outcome.py does (case folding in awk: ASCII letters only) and accepts
the same text, or for a short answer the answer's words as a run of its words. The verdict is
test.sh's exit status (temper's convention); Harbor's reward file is not written.

solve.sh removes its own `solution/` folder first when it finds it in the working directory
(temper copies it there to run it), so the reference sees the workspace the episode saw.
A task whose workspace or outcome uses the names `tests/`, `solution/`, the answer file, or a
top-level Dockerfile/.dockerignore cannot be exported (TaskError): they would collide.
"""

from __future__ import annotations

import shlex
from pathlib import Path, PurePosixPath

from learner.tasks.attempts import start_state
from learner.tasks.outcome import IGNORED_NAMES, SHORT_ANSWER_WORDS, Entry, Outcome, answer_words
from learner.tasks.task import Task, TaskError

ANSWER_FILE = "answer.txt"
RESERVED = frozenset({"tests", "solution", ANSWER_FILE, "Dockerfile", ".dockerignore"})
DOCKERFILE = "FROM ubuntu:24.04\nWORKDIR /app\nCOPY . /app/\n"
DOCKERIGNORE = "Dockerfile\n.dockerignore\n"
ANSWER_REQUEST = (
    "\n\nWhen you have the answer, write it (only the answer) to the file `answer.txt` "
    "in the working directory."
)

# Normalises its input as outcome.normalise_answer does; with -v words=1, as outcome._words does
# (answer_words: each word also stripped of surrounding punctuation).
_NORMALISE_AWK = r"""
function strip(w,   p) {
    p = ".,;:!?'\"()[]{}<>`"
    while (length(w) && index(p, substr(w, 1, 1))) w = substr(w, 2)
    while (length(w) && index(p, substr(w, length(w), 1))) w = substr(w, 1, length(w) - 1)
    return w
}
function number(w) {
    if (w ~ /^[-+]?[0-9]+\.[0-9]+$/) { sub(/0+$/, "", w); sub(/\.$/, "", w) }
    return w
}
{
    for (i = 1; i <= NF; i++) {
        w = number(tolower($i))
        if (words) w = number(strip(w))
        if (w != "") out = out (n++ ? " " : "") w
    }
}
END { print out }
"""


def export_task(task: Task, directory: Path) -> Path:
    """Write `task` (which must have an outcome) as the folder `directory/<task id>`; its path."""
    outcome = task.outcome
    if outcome is None:
        raise TaskError(f"task {task.id} has no reference outcome to export as a check")
    end = outcome.end_state(start_state(task))
    clashes = sorted({PurePosixPath(path).parts[0] for path in [*task.files, *end]} & RESERVED)
    if clashes:
        raise TaskError(f"task {task.id} uses {', '.join(clashes)}, which the exported folder needs")
    folder = Path(directory) / task.id
    _write(folder / "instruction.md", task.instruction + (ANSWER_REQUEST if outcome.answer else "") + "\n")
    _write(folder / "task.toml", _task_toml(task))
    for path, content in task.files.items():
        _write(folder / "environment" / path, content, executable=path in task.executable)
    _write(folder / "environment" / "Dockerfile", DOCKERFILE)
    _write(folder / "environment" / ".dockerignore", DOCKERIGNORE)
    _write(folder / "solution" / "solve.sh", solve_script(task), executable=True)
    if task.written_verifier:
        (check,) = task.verifier_files.values()
        _write(folder / "tests" / "check.sh", check, executable=True)
    _write(folder / "tests" / "test.sh", test_script(task, end), executable=True)
    return folder


def solve_script(task: Task) -> str:
    """The reference commands as a bash script; it writes the answer file when there is an answer."""
    answer = task.outcome is not None and task.outcome.answer is not None
    lines = [
        "#!/bin/bash",
        f"# The reference of {task.source}: its commands, each as `sh -c` in the working directory.",
        'here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)',
        'if [ "$here" = "$PWD/solution" ]; then rm -rf -- "$here"; fi  # copied into the workspace',
    ]
    if not answer:
        lines += [f"sh -c {shlex.quote(command)} </dev/null" for command in task.reference]
        return "\n".join(lines) + "\n"
    lines += [
        'last=""',
        "run() {",
        '    local out; out=$(sh -c "$1" </dev/null 2>&1)',
        "    printf '%s\\n' \"$out\"",
        '    if [ -n "${out//[[:space:]]/}" ]; then last=$out; fi',
        "}",
        *(f"run {shlex.quote(command)}" for command in task.reference),
        f"printf '%s\\n' \"$last\" > {ANSWER_FILE}",
    ]
    return "\n".join(lines) + "\n"


def test_script(task: Task, end: dict[str, Entry]) -> str:
    """The outcome check as a bash script run in the working directory: exit 0 = reproduced.
    A task with a written check runs it (tests/check.sh) instead of comparing the files."""
    outcome = task.outcome
    assert outcome is not None
    if task.written_verifier:
        return "\n".join([
            "#!/bin/bash",
            f"# The planner-written check of {task.source} (temper: learner/tasks/written_verifier.py),",
            "# kept because it passed on the reference end state and failed on the start state.",
            'fail() { echo "FAIL: $*"; exit 1; }',
            'bash "$(dirname "${BASH_SOURCE[0]}")/check.sh" || fail "the check failed"',
            *(_answer_check(outcome) if outcome.answer is not None else ["exit 0"]),
        ]) + "\n"  # fmt: skip
    names = " -o ".join(f"-name {shlex.quote(pattern)}" for pattern in IGNORED_NAMES)
    skipped = "-path ./tests" + (f" -o -path ./{ANSWER_FILE}" if outcome.answer is not None else "")
    lines = [
        "#!/bin/bash",
        f"# The reference outcome of {task.source} (temper: learner/tasks/outcome.py):",
        f"# {outcome.changes.describe()}" + ("; and an answer in answer.txt." if outcome.answer else "."),
        'fail() { echo "FAIL: $*"; exit 1; }',
        "expected() {",
        "cat <<'MANIFEST'",
        *(_manifest_line(path, entry) for path, entry in sorted(end.items())),
        "MANIFEST",
        "}",
        "entry() {",
        "    local p=${1#./}",
        '    if [ -L "$1" ]; then printf \'l - %s %s\\n\' "$(printf %s "$(readlink -- "$1")" | sha256sum | cut -d" " -f1)" "$p"',
        '    elif [ -d "$1" ]; then printf \'d - - %s\\n\' "$p"',
        '    elif [ -f "$1" ]; then',
        '        local mode; mode=$(stat -c %a -- "$1")',
        '        printf \'f %d %s %s\\n\' $(( (8#$mode >> 6) & 1 )) "$(sha256sum < "$1" | cut -d\' \' -f1)" "$p"',
        "    else printf 'o - - %s\\n' \"$p\"; fi",
        "}",
        "actual() {",
        f'    find . -mindepth 1 \\( {names} -o {skipped} \\) -prune -o -print | while IFS= read -r p; do entry "$p"; done',
        "}",
        "if ! changes=$(diff <(expected | LC_ALL=C sort) <(actual | LC_ALL=C sort)); then",
        '    echo "$changes"; fail "the files differ from the reference end state (< expected, > found)"',
        "fi",
    ]
    if outcome.answer is not None:
        lines += _answer_check(outcome)
    return "\n".join(lines) + "\n"


def _answer_check(outcome: Outcome) -> list[str]:
    """The lines of test.sh that check answer.txt (after `fail` is defined): exit 0 or fail."""
    assert outcome.answer is not None
    words = " ".join(answer_words(outcome.answer))
    short = 0 < len(words.split()) <= SHORT_ANSWER_WORDS
    lines = [
        "NORMALISE=$(cat <<'AWK'",
        _NORMALISE_AWK.strip(),
        "AWK",
        ")",
        f'[ -f {ANSWER_FILE} ] || fail "no {ANSWER_FILE}"',
        f'[ "$(awk "$NORMALISE" {ANSWER_FILE})" = {shlex.quote(outcome.answer)} ] && exit 0',
    ]
    if short:
        lines.append(
            f'case " $(awk -v words=1 "$NORMALISE" {ANSWER_FILE}) " in *{shlex.quote(" " + words + " ")}*) exit 0;; esac'
        )
    lines.append(f'fail "{ANSWER_FILE} does not hold the answer"')
    return lines


def _manifest_line(path: str, entry: Entry) -> str:
    if entry.kind == "file":
        return f"f {int(entry.executable)} {entry.sha256} {path}"
    if entry.kind == "link":
        return f"l - {entry.sha256} {path}"
    return f"d - - {path}"


def _task_toml(task: Task) -> str:
    return (
        'version = "1.0"\n\n'
        "[metadata]\n"
        f'category = "{task.family}"\n'
        f"tags = [{', '.join(_toml_string(tag) for tag in task.tags)}]\n"
        f"source = {_toml_string(task.source)}\n"
        f'split = "{task.split}"\n\n'
        f"[agent]\ntimeout_sec = {task.timeout_s:g}\n\n"
        f"[verifier]\ntimeout_sec = {task.verifier_timeout_s:g}\n"
    )


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _write(path: Path, content: str | bytes, *, executable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    path.chmod(0o755 if executable else 0o644)
