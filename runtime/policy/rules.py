"""The catalogue of rules: each rule's stable name, what it catches, and whether it asks the
operator or refuses outright. The checks live in their own modules (bombs, destruction, disk,
network, secrets); this table is the one place where deny-versus-ask is decided.

Deny is for what no task needs and no one can undo: wiping the root or a home, formatting or
overwriting a disk, fork bombs, filling the disk. Everything that a task may legitimately do but
that deserves a human's eye (touching files outside the workspace, reading credentials, sending
data off the machine, running a downloaded script) asks.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.policy.verdict import Action, Finding


@dataclass(frozen=True)
class Rule:
    action: Action
    summary: str


RULES: dict[str, Rule] = {
    "fork-bomb": Rule("deny", "a function or program that multiplies its own processes"),
    "delete-root": Rule("deny", "recursive deletion of /, a top-level directory or a home"),
    "permissions-root": Rule("deny", "recursive chmod/chown of /, a top-level directory or a home"),
    "write-device": Rule("deny", "writing to a disk device (dd of=/dev/sda, > /dev/nvme0n1)"),
    "format-disk": Rule("deny", "making a filesystem on, wiping or repartitioning a disk device"),
    "write-critical": Rule("deny", "overwriting /etc/passwd, shadow, sudoers, fstab or /boot"),
    "fill-disk": Rule("deny", "an endless stream (yes, /dev/zero, dd without count) into a file"),
    "delete-outside": Rule("ask", "deleting or moving away files outside the workspace"),
    "rm-variable": Rule("ask", "recursive deletion of $VAR/...: / when the variable is empty"),
    "permissions-outside": Rule("ask", "changing permissions or owners outside the workspace"),
    "write-outside": Rule("ask", "writing files outside the workspace and /tmp"),
    "large-file": Rule("ask", "allocating a file of 10 GiB or more"),
    "fork-loop": Rule("ask", "an endless loop that starts background jobs"),
    "read-credentials": Rule("ask", "reading keys or passwords (~/.ssh, /etc/shadow, .env)"),
    "secret-variable": Rule("ask", "printing an environment variable that holds a secret"),
    "upload": Rule("ask", "sending data to another host (curl -d/-F/-T, wget --post-file)"),
    "raw-socket": Rule("ask", "feeding data or a shell to a raw socket (nc, socat, /dev/tcp)"),
    "remote-host": Rule("ask", "copying files to or running commands on another host (ssh, scp)"),
    "remote-script": Rule("ask", "running a script straight from the network (curl ... | sh)"),
    "unreadable": Rule("ask", "a command line too long or too deeply nested to check"),
}


def finding(rule: str, reason: str) -> Finding:
    """A finding of `rule` (which must be in RULES) with a reason about this command."""
    return Finding(RULES[rule].action, rule, reason)
