"""Rules for disks: formatting or repartitioning a device, filling the disk with an endless
stream, and allocating very large files.

An endless source is `yes`, a read of /dev/zero, /dev/urandom or /dev/random (operand or `<`),
or `dd if=` one of those without `count=`. It fills the disk when its stream reaches a file
(a redirection, `tee FILE`, `dd of=FILE`) with no bounding stage (`head`, `dd count=`) between.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from runtime.policy.destruction import write_targets
from runtime.policy.invocation import Invocation, Script
from runtime.policy.paths import INFINITE_SOURCES, Place
from runtime.policy.rules import finding
from runtime.policy.verdict import Finding

LARGE_FILE_BYTES = 10 << 30
_FORMATTERS = re.compile(r"^(mkfs(\..+)?|mke2fs|mkswap|wipefs|mkntfs|mkdosfs)$")
_PARTITIONERS = frozenset({"fdisk", "sfdisk", "cfdisk", "parted", "gdisk", "sgdisk"})
_SIZE = re.compile(r"^[+<>/%-]?(\d+(?:\.\d+)?)([kmgtpe]?)(ib|b)?$", re.IGNORECASE)
_UNITS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5, "e": 6}


def check(script: Script) -> Iterator[Finding]:
    for invocation in script.invocations:
        yield from _format(invocation)
        yield from _large_file(invocation)
    seen: set[tuple[int, int]] = set()
    for invocation in script.invocations:
        key = (invocation.script, invocation.command.pipeline)
        if key not in seen:
            seen.add(key)
            yield from _fill(script.pipeline(invocation))


def _format(inv: Invocation) -> Iterator[Finding]:
    if _FORMATTERS.match(inv.name) or inv.name in _PARTITIONERS:
        listing = inv.has_option("--list", letters="l") or "print" in inv.args
        if inv.name in _PARTITIONERS and listing:
            return
        for operand in inv.operands(frozenset({"-t", "-L", "-O", "-b", "-N", "-E", "-T"})):
            where = inv.locate(operand)
            if where.place is Place.DEVICE:
                yield finding("format-disk", f"{inv.name} destroys what is on {where.shown}")
            elif where.place in (Place.CRITICAL, Place.OUTSIDE):
                yield finding("write-outside", f"{inv.name} rewrites {where.shown}")


def _large_file(inv: Invocation) -> Iterator[Finding]:
    sizes: list[str] = []
    if inv.name == "fallocate":
        sizes = inv.option_values("-l", "--length")
    elif inv.name == "truncate":
        sizes = inv.option_values("-s", "--size")
    elif inv.name == "head" and _reads_endless(inv):
        sizes = inv.option_values("-c", "--bytes")
    total = max((parse_size(size) for size in sizes), default=0)
    if inv.name == "dd":
        operands = _dd_operands(inv)
        if "count" in operands:
            block = parse_size(operands.get("obs") or operands.get("bs") or "512")
            total = block * parse_size(operands["count"])
    if total >= LARGE_FILE_BYTES:
        yield finding("large-file", f"{inv.name} makes {total / (1 << 30):.0f} GiB of data")


def _fill(stages: list[Invocation]) -> Iterator[Finding]:
    endless: Invocation | None = None
    for stage in stages:
        if stage.name == "head" or (stage.name == "dd" and "count" in _dd_operands(stage)):
            endless = None
        elif _endless(stage):
            endless = stage
        if endless is None:
            continue
        for target in write_targets(stage):
            if stage.locate(target).place not in (Place.STREAM, Place.DEVICE):
                yield finding("fill-disk", f"{endless.name} writes an endless stream into {target}")
                return


def _endless(inv: Invocation) -> bool:
    if inv.name == "yes":
        return True
    if inv.name == "dd":
        operands = _dd_operands(inv)
        source = inv.locate(operands.get("if", "")).path if "if" in operands else ""
        return source in INFINITE_SOURCES and "count" not in operands
    return _reads_endless(inv)


def _reads_endless(inv: Invocation) -> bool:
    sources = [s for s in (*inv.operands(), *inv.reads_from()) if "/dev/" in s or "$" in s]
    return any(inv.locate(source).path in INFINITE_SOURCES for source in sources)


def _dd_operands(inv: Invocation) -> dict[str, str]:
    return dict(arg.split("=", 1) for arg in inv.args if "=" in arg)


def parse_size(text: str) -> int:
    """Bytes in a size such as `100G`, `1.5TiB`, `10GB`, `+5M` or `4096`; 0 if unreadable."""
    match = _SIZE.match(text.strip())
    if match is None:
        return 0
    number, unit, suffix = match.groups()
    base = 1000 if suffix and suffix.lower() == "b" and unit else 1024
    return int(float(number) * base ** _UNITS[unit.lower()])
