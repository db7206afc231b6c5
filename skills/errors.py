"""The skills package's errors, one tree:

```
SkillError                  anything the skill library refuses; the message says what to do
  SkillFormatError          a SKILL.md that breaks the agentskills.io rules (`problems`: each one)
  SkillBlocked              the security scan found something that blocks the write (`findings`)
  SkillNotFound             no skill (or no file of a skill) by that name
  SkillExists               a create or import would overwrite a skill that is already there
  PatchError                an edit whose `old` text is missing or not unique
```

All of them are user or model mistakes: callers show the message (a tool returns it as
"Error: ..."), they never crash on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skills.format import Problem
    from skills.scan import Finding


class SkillError(Exception):
    """A skill operation refused, with a message that says why and what to do."""


class SkillFormatError(SkillError):
    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(str(problem) for problem in self.problems))


class SkillBlocked(SkillError):
    def __init__(self, findings: Sequence[Finding]) -> None:
        self.findings = list(findings)
        blocking = [str(finding) for finding in self.findings if finding.severity == "block"]
        super().__init__("blocked by the security scan: " + "; ".join(blocking))


class SkillNotFound(SkillError):
    pass


class SkillExists(SkillError):
    pass


class PatchError(SkillError):
    pass
