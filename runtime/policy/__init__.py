"""The dangerous-command policy: `assess(command)` says allow, ask or deny, and why.

The sandbox, not this policy, is the security boundary. These rules read a command line with
heuristics (no shell is run, nothing is expanded but what the line itself sets), so a
determined adversary can always write something they miss: `$(printf 'r%s' m) -rf /`, a script
file, a program in another language. What the policy is for is catching accidents and obvious
mischief before they run and putting a human in the loop for what deserves one: it denies what
no task needs and no one can undo (wiping / or a home, formatting a disk, fork bombs, filling the
disk) and asks before what a task may need but a person should see (files outside the
workspace, credentials, uploads, remote hosts, `curl | sh`). The rule table is in rules.py.

Invariants: `assess` never raises and never runs anything; it is a pure function of the command
text and the workspace path; a verdict's `rule` is a stable name from `RULES`, so an operator
can allow a rule for a session.
"""

from runtime.policy.assess import assess
from runtime.policy.rules import RULES, Rule
from runtime.policy.verdict import Action, Finding, Verdict

__all__ = ["RULES", "Action", "Finding", "Rule", "Verdict", "assess"]
