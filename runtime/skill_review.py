"""The learn stage's skill work: keep what a successful turn taught, and retire what fails.

`learn_skills(catalog, planner, turn)` runs after the reply, off its path:

1. **Review** (`review_turn`). Only a turn whose task succeeded (reward >= SUCCESS_REWARD, from
   the user, a verifier or the judge) and was non-trivial (at least `min_tool_calls` tool calls,
   or an error it got past) is reviewed. The planner sees the request, the work (calls and
   results, cut), the reply, the SKILL.md of each skill the turn viewed and the close skills the
   index finds, and answers in the `Decision` schema (JSON): none, patch or create, preferring
   patch-the-used > patch-a-close-one > create. A create whose near-duplicate exists
   (skills/similarity.py) is not written: the planner is asked once more, shown the duplicate,
   for a patch of it instead. Every write is validated and scanned by the library.
2. **Health** (runtime/skill_health.py) for the skills the turn viewed: flag, revise once,
   archive.

Invariants: a reply that is not the schema, an edit that does not apply, a write the format or
the scan refuses: each ends the review with its reason in the outcome, never an exception; a
model that cannot be reached raises ModelError, which the agent's drain lets pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from memory import SUCCESS_REWARD
from runtime import prompts
from runtime.models import ChatModel
from runtime.skill_catalog import SkillCatalog
from runtime.skill_decision import ReviewOutcome, apply_decision, parse_decision
from runtime.skill_health import HealthChange, check_health
from skills import SkillError

WORK_CHARS = 6_000  # the transcript the reviewer reads: start and end kept
SKILL_CHARS = 4_000  # each used skill's SKILL.md as shown to the reviewer
CLOSE_SKILLS = 3


@dataclass(frozen=True)
class TurnRecord:
    """What the review needs of a finished turn: its episode, request and messages (as the
    planner saw them: system prompt, history, tool calls and results, the reply)."""

    episode_id: int
    request: str
    messages: list[dict[str, Any]]

    def work(self) -> tuple[int, int]:
        """(tool calls, tool results that failed) of this turn's own messages."""
        start = max((i for i, m in enumerate(self.messages) if m.get("role") == "user"), default=0)
        own = self.messages[start:]
        calls = sum(len(m.get("tool_calls") or []) for m in own)
        failed = sum(1 for m in own if m.get("role") == "tool" and _failed(str(m.get("content", ""))))
        return calls, failed


@dataclass(frozen=True)
class Learned:
    review: ReviewOutcome
    health: list[HealthChange]


async def learn_skills(catalog: SkillCatalog, planner: ChatModel, turn: TurnRecord) -> Learned:
    """Review the turn, then check the health of the skills it viewed."""
    review = (
        await review_turn(catalog, planner, turn)
        if catalog.settings.review
        else ReviewOutcome("skipped", reason="reviews are off")
    )
    return Learned(review, await check_health(catalog, planner, catalog.index.viewed_in(turn.episode_id)))


async def review_turn(catalog: SkillCatalog, planner: ChatModel, turn: TurnRecord) -> ReviewOutcome:
    episode = catalog.store.episodes.get(turn.episode_id)
    if episode.reward is None or episode.reward < SUCCESS_REWARD:
        return ReviewOutcome("skipped", reason=f"the task did not succeed (reward {episode.reward})")
    calls, failed = turn.work()
    if calls < catalog.settings.min_tool_calls and not (failed and calls >= 2):
        return ReviewOutcome("skipped", reason=f"trivial: {calls} tool calls, {failed} errors overcome")
    used = catalog.index.viewed_in(turn.episode_id)
    close = [m for m in catalog.search(turn.request, limit=CLOSE_SKILLS + len(used)) if m.name not in used]
    messages = [
        {"role": "system", "content": prompts.SKILL_REVIEW},
        {"role": "user", "content": _review_request(catalog, turn, used, close[:CLOSE_SKILLS])},
    ]
    reply = await planner.complete(messages)
    decision = parse_decision(reply.text)
    if decision is None:
        return ReviewOutcome(
            "refused", reason=f"the review's answer was not the schema: {reply.text[:120]!r}"
        )
    if decision.action == "create":
        duplicate = catalog.near_duplicate(decision.name, decision.description or "", decision.body or "")
        if duplicate is not None:  # ask for a patch of the duplicate instead
            name, score = duplicate
            text = _cut(catalog.library.text(name), SKILL_CHARS)
            messages += [
                {"role": "assistant", "content": reply.text},
                {
                    "role": "user",
                    "content": prompts.SKILL_DUPLICATE.format(name=name, score=score, text=text),
                },
            ]
            reply = await planner.complete(messages)
            decision = parse_decision(reply.text)
            if decision is None or decision.action == "create":
                return ReviewOutcome(
                    "refused", name, f"a near-duplicate of {name} ({score:.2f}) and no patch of it"
                )
            if decision.action == "patch" and decision.name != name:
                return ReviewOutcome(
                    "refused", decision.name, f"asked for a patch of {name}, got one of {decision.name}"
                )
    return apply_decision(catalog, decision, turn.episode_id)


def _review_request(catalog: SkillCatalog, turn: TurnRecord, used: list[str], close: list[Any]) -> str:
    parts = [f"Request:\n{turn.request}", f"Work:\n{_render_work(turn.messages)}"]
    final = next((m.get("content") for m in reversed(turn.messages) if m.get("role") == "assistant"), "")
    parts.append(f"Final reply:\n{_cut(str(final or ''), 1_500)}")
    for name in used:
        try:
            parts.append(f"Skill used, {name} (SKILL.md):\n{_cut(catalog.library.text(name), SKILL_CHARS)}")
        except SkillError:
            continue
    if close:
        parts.append("Close skills:\n" + "\n".join(f"- {m.name}: {m.description}" for m in close))
    else:
        parts.append("Close skills: none")
    return "\n\n".join(parts)


def _render_work(messages: list[dict[str, Any]]) -> str:
    start = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)
    lines = []
    for message in messages[start:]:
        for call in message.get("tool_calls") or []:
            lines.append(f"called {call['function']['name']}({call['function']['arguments']})")
        if message.get("role") == "tool":
            lines.append(f"result: {_cut(str(message.get('content', '')), 1_000)}")
    return _cut("\n".join(lines), WORK_CHARS)


def _failed(result: str) -> bool:
    return result.startswith("Error:") or bool(re.search(r"\[exit [1-9]\d*\]", result))


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + "\n…\n" + text[-half:]
