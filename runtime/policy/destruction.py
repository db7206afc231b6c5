"""Rules for destroying or changing files outside the workspace: deletion (rm, find -delete,
mv away, rsync --delete), permissions (chmod/chown -R) and writes (redirections, tee, cp, dd of=,
sed -i, curl -o). Inside the workspace and /tmp, anything goes: that is what they are for.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from runtime.policy.invocation import Invocation, Script
from runtime.policy.paths import Place
from runtime.policy.rules import finding
from runtime.policy.verdict import Finding

_DELETERS = frozenset({"rm", "unlink", "rmdir", "shred", "srm"})
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_CRITICAL_FILE = re.compile(r"^/etc/(passwd|shadow|group|gshadow|sudoers|sudoers\.d/.*|fstab)$|^/boot(/|$)")
_UNSET_PREFIX = re.compile(r"^\$\{?(\w+)\}?/")
_SHRED_VALUES = frozenset({"-n", "-s", "--iterations", "--size", "--random-source"})
_RSYNC_VALUES = frozenset({"-e", "--rsh", "--exclude", "--include", "--filter", "-f"})
_COPY_VALUES = frozenset({"-t", "--target-directory", "-S", "--suffix", "-m", "--mode", "-o", "-g"})
_SED_VALUES = frozenset({"-e", "--expression", "-f", "--file", "-l", "--line-length"})


def check(script: Script) -> Iterator[Finding]:
    for invocation in script.invocations:
        for target, recursive in _deletions(invocation, script):
            yield from _deletion(invocation, target, recursive)
        yield from _permissions(invocation)
        for target in write_targets(invocation):
            yield from _write(invocation, target)


def _deletions(inv: Invocation, script: Script) -> Iterator[tuple[str, bool]]:
    """(path, recursively) for each thing `inv` deletes."""
    if inv.name in _DELETERS:
        recursive = inv.name in ("rm", "srm") and inv.has_option("--recursive", letters="rR")
        targets = inv.operands(_SHRED_VALUES if inv.name == "shred" else frozenset())
        for target in targets:
            yield target, recursive
        first = script.pipeline(inv)[0]
        if not targets and inv.command.piped_in and first.name == "find":
            for start in _find_starts(first.args):  # find / | xargs rm -rf
                yield start, True
    elif inv.name == "find" and _find_deletes(inv.args):
        for start in _find_starts(inv.args):
            yield start, True
    elif inv.name == "mv":
        sources = inv.operands(_COPY_VALUES)
        if not inv.option_values("-t", "--target-directory"):
            sources = sources[:-1]
        for source in sources:
            yield source, True
    elif inv.name == "rsync" and inv.has_option(
        "--delete", "--delete-before", "--delete-after", "--delete-during", "--delete-excluded"
    ):
        operands = inv.operands(_RSYNC_VALUES)
        if len(operands) >= 2:
            yield operands[-1], True


def _deletion(inv: Invocation, target: str, recursive: bool) -> Iterator[Finding]:
    where = inv.locate(target)
    if where.place is Place.DEVICE:
        yield finding("write-device", f"destroys the disk device {where.shown}")
    elif where.place is Place.CRITICAL and recursive:
        yield finding("delete-root", f"deletes {where.shown} and everything under it")
    elif where.place in (Place.CRITICAL, Place.OUTSIDE):
        yield finding("delete-outside", f"deletes {where.shown}, outside the workspace")
    elif where.place is Place.UNKNOWN and recursive:
        match = _UNSET_PREFIX.match(target)
        if match and match.group(1) not in inv.env:
            yield finding(
                "rm-variable",
                f"deletes {target} recursively: if ${match.group(1)} is empty that is "
                f"/{target[match.end() :]}",
            )


def _find_deletes(args: tuple[str, ...]) -> bool:
    if "-delete" in args:
        return True
    return any(
        arg in _FIND_ACTIONS and i + 1 < len(args) and args[i + 1].rsplit("/", 1)[-1] in _DELETERS
        for i, arg in enumerate(args)
    )


def _find_starts(args: tuple[str, ...]) -> list[str]:
    i = 0
    while i < len(args) and (args[i] in ("-H", "-L", "-P") or args[i].startswith("-O")):
        i += 1
    starts = []
    for arg in args[i:]:
        if arg.startswith(("-", "(", "!", ")")) or arg == ",":
            break
        starts.append(arg)
    return starts or ["."]


def _permissions(inv: Invocation) -> Iterator[Finding]:
    if inv.name not in ("chmod", "chown", "chgrp"):
        return
    recursive = inv.has_option("--recursive", letters="R")
    operands = inv.operands()
    targets = operands if inv.has_option("--reference") else operands[1:]
    for target in targets:
        where = inv.locate(target)
        if where.place is Place.CRITICAL and recursive:
            yield finding("permissions-root", f"changes {inv.name} of {where.shown} and everything under it")
        elif where.place is Place.CRITICAL or (where.place is Place.OUTSIDE and recursive):
            yield finding(
                "permissions-outside", f"changes {inv.name} of {where.shown}, outside the workspace"
            )


def write_targets(inv: Invocation) -> list[str]:
    """Every file `inv` writes, as written in the command."""
    targets = inv.writes_to()
    name = inv.name
    if name == "tee":
        targets += inv.operands()
    elif name in ("cp", "mv", "install", "ln", "rsync", "scp"):
        directory = inv.option_values("-t", "--target-directory")
        operands = inv.operands(_RSYNC_VALUES if name == "rsync" else _COPY_VALUES)
        targets += directory or (operands[-1:] if len(operands) >= 2 else [])
    elif name == "dd":
        targets += [arg[3:] for arg in inv.args if arg.startswith("of=")]
    elif name == "truncate":
        targets += inv.operands(frozenset({"-s", "--size", "-r", "--reference"}))
    elif name == "sed" and inv.has_option("--in-place", letters="i"):
        operands = inv.operands(_SED_VALUES)
        scripted = inv.option_values("-e", "--expression", "-f", "--file")
        targets += operands if scripted else operands[1:]
    elif name == "curl":
        targets += inv.option_values("-o", "--output")
    elif name == "wget":
        targets += [v for v in inv.option_values("-O", "--output-document") if v != "-"]
    return targets


def _write(inv: Invocation, target: str) -> Iterator[Finding]:
    where = inv.locate(target)
    if inv.name == "scp" and ":" in target:
        return  # a remote destination: the network rules judge it
    if where.place is Place.DEVICE:
        yield finding("write-device", f"overwrites the disk device {where.shown}")
    elif _CRITICAL_FILE.match(where.path):
        yield finding("write-critical", f"overwrites {where.shown}, needed to boot or log in")
    elif where.place in (Place.CRITICAL, Place.OUTSIDE):
        yield finding("write-outside", f"writes {where.shown}, outside the workspace")
