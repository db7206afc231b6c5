"""The user model's learning half: facts extracted from what a person says, off the reply path.

After a turn (the loop's learn stage), once a session holds `every_turns` of the person's
messages that extraction has not read, or when the session ends, the planner reads them with the facts already known that they touch, and answers in the schema
below (`Extraction`, JSON). Each proposed fact is then stored through memory's facts API:

    same_as a known fact      merged into it (restated: one more mention, newer)
    replaces a known fact     supersedes it (the old one stays as history)
    neither                   added (or merged, when its words equal a current fact's)

A session ends when it has been quiet for `idle_end_s`; the person's next turn in any other
session notices it (the database says which sessions hold unread messages, so this survives
restarts and works across CLI runs and the daemon alike).

Invariants:
- A reply that is not the schema is dropped, never raised: the batch counts as read, so a
  model that cannot do this costs one call per batch, not one per turn. Proposed facts are
  validated one by one; a bad one is dropped and the rest are kept.
- Isolation: the planner sees only this user's messages and facts; a proposed fact must cite
  at least one of this batch's messages by the user, and same_as/replaces must name one of the
  known facts it was shown, else it is dropped. So a reply cannot attach a fact to another
  person or touch another person's facts, whatever the messages ask for.
- One extraction per session at a time; the model being unreachable leaves the batch unread
  (a later turn tries again).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory import FACT_KINDS, Fact, MemoryStore, UnknownRecordError
from runtime import prompts
from runtime.context import SessionRef
from runtime.models import ChatModel, ModelError

FactKind = Literal["preference", "biography", "relationship", "plan", "constraint", "other"]
KNOWN_FACT_TOKENS = 600  # the known facts shown to the extractor, by relevance and stability
MAX_FACTS_PER_BATCH = 20
ENDED_PER_TURN = 2  # quiet sessions read after one turn, at most (the rest after later turns)
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


@dataclass(frozen=True)
class UserModelSettings:
    every_turns: int = 6  # the person's messages per extraction batch ([users] extraction_every_turns)
    idle_end_s: float = 1800.0  # a session this long quiet has ended: what it left unread is read
    batch_chars: int = 12_000  # the most message text one extraction reads


class ExtractedFact(BaseModel):
    """One fact the planner proposes (the structured-output schema)."""

    model_config = ConfigDict(extra="ignore")

    statement: str = Field(min_length=1, max_length=300)
    kind: FactKind = "other"
    confidence: float = Field(0.8, ge=0, le=1)
    sources: list[int] = Field(min_length=1, max_length=50)
    same_as: int | None = None
    replaces: int | None = None


@dataclass
class ExtractionReport:
    session_id: int
    read: int = 0  # messages read
    added: int = 0
    merged: int = 0
    superseded: int = 0
    dropped: int = 0  # proposed facts refused (invalid, uncited, unknown reference)
    error: str | None = None  # why the batch was not read (the model failed) or the reply dropped


def parse_extraction(text: str) -> tuple[list[ExtractedFact], int] | None:
    """The valid facts of a reply and how many were invalid; None when the reply is not a JSON
    object with a `facts` list."""
    match = _JSON_OBJECT.search(text)
    try:
        reply: Any = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        return None
    if not isinstance(reply, dict) or not isinstance(reply.get("facts"), list):
        return None
    facts, invalid = [], 0
    for item in reply["facts"][:MAX_FACTS_PER_BATCH]:
        try:
            facts.append(ExtractedFact.model_validate(item))
        except ValidationError:
            invalid += 1
    return facts, invalid + max(0, len(reply["facts"]) - MAX_FACTS_PER_BATCH)


class UserModel:
    """Fact extraction for one agent, run by `after_turn` in the learn stage."""

    def __init__(self, store: MemoryStore, planner: ChatModel, settings: UserModelSettings) -> None:
        if settings.every_turns < 1:
            raise ValueError(f"every_turns must be at least 1, got {settings.every_turns}")
        self.store = store
        self.planner = planner
        self.settings = settings
        self._running: set[int] = set()

    async def after_turn(self, session: SessionRef) -> list[ExtractionReport]:
        """Read the session if it holds a full batch of unread messages, and the person's other
        sessions that ended (went quiet) with messages left unread."""
        sessions = self.store.facts.ended_unread(
            session.user_id, time.time() - self.settings.idle_end_s, exclude=session.id, limit=ENDED_PER_TURN
        )
        ended = [SessionRef(session_id, "", session.user_id, session.user_handle) for session_id in sessions]
        if self.store.facts.unread_count(session.id, session.user_id) >= self.settings.every_turns:
            ended.insert(0, session)
        return [await self.extract(ref) for ref in ended]

    async def extract(self, session: SessionRef) -> ExtractionReport:
        report = ExtractionReport(session.id)
        if session.id in self._running:
            return report
        self._running.add(session.id)
        try:
            await self._extract(session, report)
        finally:
            self._running.discard(session.id)
        return report

    async def _extract(self, session: SessionRef, report: ExtractionReport) -> None:
        facts = self.store.facts
        batch = facts.unread(session.id, session.user_id, self.settings.batch_chars)
        if not batch:
            return
        said = {message_id for message_id, role, _ in batch if role == "user"}
        question = "\n".join(text for _, role, text in batch if role == "user")
        known = facts.relevant(session.user_id, question, KNOWN_FACT_TOKENS)
        try:
            reply = await self.planner.complete(
                [
                    {"role": "system", "content": prompts.EXTRACT_FACTS},
                    {"role": "user", "content": _render(known, batch)},
                ]
            )
        except ModelError as error:
            report.error = f"extraction postponed: {error}"
            return
        report.read = len(batch)
        parsed = parse_extraction(reply.text)
        if parsed is None:
            report.error = f"extraction reply dropped, not the schema: {reply.text[:120]!r}"
        else:
            proposed, report.dropped = parsed
            known_ids = {fact.id for fact in known}
            for fact in proposed:
                self._store(session.user_id, fact, said, known_ids, report)
        facts.mark_read(session.id, batch[-1][0])

    def _store(
        self, user_id: int, fact: ExtractedFact, said: set[int], known: set[int], report: ExtractionReport
    ) -> None:
        sources = [message_id for message_id in dict.fromkeys(fact.sources) if message_id in said]
        unknown = {fact.replaces, fact.same_as} - known - {None}  # facts it was not shown
        if not sources or unknown or fact.kind not in FACT_KINDS:
            report.dropped += 1
            return
        facts = self.store.facts
        try:
            if fact.replaces is not None:
                facts.supersede(
                    user_id, fact.replaces, fact.statement, kind=fact.kind, sources=sources,
                    confidence=fact.confidence,
                )  # fmt: skip
                report.superseded += 1
            elif fact.same_as is not None:
                facts.merge(user_id, fact.same_as, sources=sources, confidence=fact.confidence)
                report.merged += 1
            else:
                change = facts.add(
                    user_id, fact.statement, kind=fact.kind, sources=sources, confidence=fact.confidence
                )
                report.added += change.action == "added"
                report.merged += change.action == "merged"
        except (ValueError, UnknownRecordError):
            report.dropped += 1


def _render(known: list[Fact], batch: list[tuple[int, str, str]]) -> str:
    facts = "\n".join(f"[{fact.id}] {fact.statement}" for fact in known) or "(none)"
    messages = "\n".join(f"[{message_id}] {role}: {_clip(text)}" for message_id, role, text in batch)
    return f"Known facts:\n{facts}\n\nNew messages:\n{messages}"


def _clip(text: str, limit: int = 2_000) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
