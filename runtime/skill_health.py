"""Skills that do not help: flagged, revised once by the planner, archived if they still fail.

A skill is failing (`SkillCatalog.is_failing`) when it has at least `min_uses` (8) rewarded
uses and the upper end of its success rate's 90% Wilson interval lies below the success rate of
comparable turns without it (memory/skill_index.py says which turns those are). Why 8: below
that the interval is so wide that only a skill with no success at all could be judged against
a typical baseline, and each use is a real person's task, so waiting much longer lets a bad
skill hurt many of them; at 8 uses, 2 successes (25%) is already judged failing against a
baseline of 70%, while 5 of 8 (62%) is not.

    healthy --failing--> flagged --planner's patch--> revised --failing again, on uses since
                           |                                    the revision--> archived
                           '--no usable patch: stays flagged (the next use tries again)

Archived skills leave the index and the prompt; `temper skills restore` brings one back (its
record starts afresh). Checked after each turn, for the skills that turn viewed only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from runtime import prompts
from runtime.models import ChatModel
from runtime.skill_catalog import SkillCatalog
from runtime.skill_decision import apply_decision, parse_decision


@dataclass(frozen=True)
class HealthChange:
    name: str
    state: str  # flagged, revised, archived
    note: str


async def check_health(catalog: SkillCatalog, planner: ChatModel, names: list[str]) -> list[HealthChange]:
    changes = []
    for name in names:
        if not catalog.library.exists(name):
            continue
        stats = catalog.stats(name)
        if not catalog.is_failing(stats):
            continue
        figures = (
            f"{stats.success_with:.0%} success in {stats.rewarded} uses against {stats.success_without:.0%}"
            f" in {stats.comparable} comparable turns ({stats.baseline})"
        )
        health = catalog.index.health(name)
        if health is not None and health.state == "revised":
            catalog.archive(name)
            catalog.index.set_health(name, "archived", f"still failing after its revision: {figures}")
            changes.append(HealthChange(name, "archived", figures))
            continue
        catalog.index.set_health(name, "flagged", figures)
        changes.append(HealthChange(name, "flagged", figures))
        revised = await _revise(catalog, planner, name, figures)
        if revised is not None:
            catalog.index.set_health(
                name, "revised", f"revised ({revised}) after {figures}", since=time.time()
            )
            changes.append(HealthChange(name, "revised", revised))
    return changes


async def _revise(catalog: SkillCatalog, planner: ChatModel, name: str, figures: str) -> str | None:
    """Ask the planner for one patch; the new version's description, or None if none applied."""
    failures = catalog.index.failing_requests(name)
    listed = "; ".join(
        f"{request[:160]!r} ({reason[:120] or 'no reason given'})" for request, reason in failures
    )
    prompt = prompts.SKILL_REVISE.format(
        stats=figures, failures=listed or "none recorded", name=name, text=catalog.library.text(name)
    )
    reply = await planner.complete([{"role": "user", "content": prompt}])
    decision = parse_decision(reply.text)
    if decision is None or decision.action != "patch" or decision.name != name:
        return None
    outcome = apply_decision(catalog, decision, None)
    return f"version {outcome.version}" if outcome.action == "patched" else None
