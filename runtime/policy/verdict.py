"""What the policy says about a command: a `Verdict` built from the `Finding`s of its rules.

Invariants: a verdict's action is the most severe action among its findings (deny > ask >
allow); `rule` and `reason` come from the first finding of that severity, and `findings` keeps
every finding of that severity so that an approval can be matched against all of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

Action = Literal["allow", "ask", "deny"]
_SEVERITY: dict[Action, int] = {"allow": 0, "ask": 1, "deny": 2}


@dataclass(frozen=True)
class Finding:
    """One rule that matched: what to do, which rule (a stable name), and why, in words."""

    action: Action
    rule: str
    reason: str


@dataclass(frozen=True)
class Verdict:
    """`action` for the whole command; `rule` and `reason` of its first finding of that action."""

    action: Action
    reason: str
    rule: str
    findings: tuple[Finding, ...] = field(default=())

    @property
    def rules(self) -> frozenset[str]:
        """Every rule behind this verdict (an approval by rule must cover all of them)."""
        return frozenset(finding.rule for finding in self.findings)


ALLOWED = Verdict("allow", "no rule matched", "")


def decide(findings: Iterable[Finding]) -> Verdict:
    """The verdict for a command from all its findings (in the order the rules found them)."""
    unique = list(dict.fromkeys(findings))
    if not unique:
        return ALLOWED
    worst = max(_SEVERITY[finding.action] for finding in unique)
    top = tuple(finding for finding in unique if _SEVERITY[finding.action] == worst)
    reasons = "; ".join(dict.fromkeys(finding.reason for finding in top))
    return Verdict(top[0].action, reasons, top[0].rule, top)
