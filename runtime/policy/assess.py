"""`assess(command)`: read a command line, run every rule over it, and decide.

The rules run over the programs the line would run (see invocation.py), in this order: fork
bombs, destruction of files, disks, the network, secrets. Their findings become one `Verdict`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from runtime.policy import bombs, destruction, disk, network, secrets
from runtime.policy.invocation import Script, read_script
from runtime.policy.rules import finding
from runtime.policy.verdict import Finding, Verdict, decide

CHECKS: tuple[Callable[[Script], Iterable[Finding]], ...] = (
    bombs.check,
    destruction.check,
    disk.check,
    network.check,
    secrets.check,
)


def assess(command: str, *, workdir: str | None = None) -> Verdict:
    """Whether to run `command` ("allow"), ask the operator ("ask"), or refuse it ("deny").

    `workdir` is the workspace as commands see it (e.g. "/workspace"), so that absolute paths
    under it count as inside; without it only relative paths do.
    """
    script = read_script(command, workdir=workdir)
    findings = [found for check in CHECKS for found in check(script)]
    if script.unreadable:
        findings.append(finding("unreadable", f"too complex to check: {script.unreadable}"))
    return decide(findings)
