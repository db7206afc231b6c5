"""Rules for secrets: reading credential files (~/.ssh, ~/.aws/credentials, /etc/shadow, a
process's environ, .env files outside the workspace, a whole home directory) and printing
environment variables whose names say they hold a secret (`echo $GITHUB_TOKEN`).

Commands that only name a path without reading it (ls, stat, test, mkdir, chmod, rm, ...) are
not reads; rm and chmod have rules of their own. Which variable names hold a secret is the
redactor's vocabulary (memory's `is_secret_name`), so the policy and the redaction of
trajectories agree on it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memory import is_secret_name
from runtime.policy.invocation import Invocation, Script
from runtime.policy.paths import Place, credential, is_home
from runtime.policy.rules import finding
from runtime.policy.verdict import Finding

_NOT_READING = frozenset(
    {
        "ls",
        "stat",
        "test",
        "[",
        "[[",
        "mkdir",
        "touch",
        "chmod",
        "chown",
        "chgrp",
        "du",
        "cd",
        "pushd",
        "which",
        "type",
        "realpath",
        "dirname",
        "basename",
        "readlink",
        "rm",
        "rmdir",
        "unlink",
        "echo",
        "printf",
        "df",
    }
)
_WHOLE_TREE_READERS = frozenset(
    {"tar", "zip", "7z", "cp", "rsync", "scp", "grep", "egrep", "rg", "ag", "ack", "cpio"}
)
_COPIERS = frozenset({"cp", "mv", "install", "ln", "rsync", "scp"})
_VARIABLE = re.compile(r"\$\{?(\w+)")


def check(script: Script) -> Iterator[Finding]:
    for invocation in script.invocations:
        yield from _credentials(invocation)
        yield from _secret_variables(invocation)


def _credentials(inv: Invocation) -> Iterator[Finding]:
    if inv.name in _NOT_READING:
        return
    for candidate in _read_paths(inv):
        where = inv.locate(candidate)
        what = credential(where)
        if what is not None:
            yield finding("read-credentials", f"reads {what} ({where.shown})")
        elif where.place is Place.CRITICAL and is_home(where.path) and (inv.name in _WHOLE_TREE_READERS):
            yield finding("read-credentials", f"reads the whole home directory {where.shown}")


def _read_paths(inv: Invocation) -> Iterator[str]:
    """Arguments (and option values after `=` or `@`) that may be files it reads."""
    args = list(inv.args)
    if inv.name in _COPIERS:
        operands = inv.operands()
        if len(operands) >= 2:
            args.remove(operands[-1])  # the destination is written, not read
    for arg in [*args, *inv.reads_from()]:
        yield arg
        for part in re.split(r"[=@]", arg)[1:]:
            if part:
                yield part


def _secret_variables(inv: Invocation) -> Iterator[Finding]:
    if inv.name in ("echo", "printf"):
        names = [name for arg in inv.args for name in _VARIABLE.findall(arg)]
    elif inv.name == "printenv":
        names = list(inv.operands())
    else:
        return
    for name in names:
        if is_secret_name(name):
            yield finding("secret-variable", f"prints ${name}, which looks like a secret")
            return
