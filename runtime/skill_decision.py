"""The planner's structured answer about a skill (`Decision`), read and carried out.

Used by the learn stage's review (runtime/skill_review.py) and by the revision of a failing
skill (runtime/skill_health.py). A reply that is not the schema reads as None; a write the
library refuses (format, scan, a missing or repeated `old` text, a name taken) becomes a
`ReviewOutcome` with the reason, never an exception.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runtime.skill_catalog import SkillCatalog, refusal
from skills import Edit, SkillDocument, SkillError, SkillExists

_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


class PatchEdit(BaseModel):
    old: str = Field(min_length=1)
    new: str


class Decision(BaseModel):
    """The planner's structured answer to a review."""

    model_config = ConfigDict(extra="ignore")

    action: Literal["none", "patch", "create"]
    name: str = ""
    reason: str = ""
    description: str | None = None
    body: str | None = None
    edits: list[PatchEdit] = Field(default_factory=list)


@dataclass
class ReviewOutcome:
    action: str  # skipped, none, created, patched, refused
    name: str | None = None
    reason: str = ""
    version: int | None = None


def apply_decision(catalog: SkillCatalog, decision: Decision, episode_id: int | None) -> ReviewOutcome:
    """Write what the planner decided; a refusal comes back as the outcome's reason."""
    if decision.action == "none":
        return ReviewOutcome("none", reason=decision.reason)
    try:
        if decision.action == "patch":
            if not decision.edits:
                return ReviewOutcome("refused", decision.name, "a patch with no edits")
            edits = [Edit(edit.old, edit.new) for edit in decision.edits]
            note = f"patched after episode {episode_id}: {decision.reason}"[:300]
            written = catalog.patch(decision.name, edits, note=note)
            return ReviewOutcome("patched", decision.name, decision.reason, written.version)
        document = SkillDocument(decision.name, decision.description or "", decision.body or "")
        written = catalog.create(document, created_by="agent", episode_id=episode_id)
        return ReviewOutcome("created", decision.name, decision.reason, written.version)
    except SkillExists as error:
        return ReviewOutcome("refused", decision.name, str(error))
    except SkillError as error:
        return ReviewOutcome("refused", decision.name, refusal(error))


def parse_decision(text: str) -> Decision | None:
    match = _JSON_OBJECT.search(text)
    if match is None:
        return None
    try:
        return Decision.model_validate(json.loads(match.group(0)))
    except (json.JSONDecodeError, ValidationError):
        return None
