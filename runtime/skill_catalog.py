"""The skills a turn can use: the library's files (skills/) kept in step with memory's index.

`SkillCatalog` is the one way the runtime and the CLI touch skills:

- **sync**: the files are the source of truth. Each SKILL.md's mtime and size are compared with
  the index; a changed stat leads to a content hash, and a changed hash to a re-parse and an
  upsert; a folder gone (deleted, archived) leaves the index. A file broken by a hand edit leaves
  the index too, and `invalid` names it. Runs at most every `sync_interval_s` before retrieval,
  and after every write made here.
- **retrieval for the prompt**: pinned skills, then the skills the index finds for the request
  and the recent turns, one line each ("name: description", cut at `line_chars`), within
  `prompt_tokens` (counted conservatively at one token per three characters) and at most
  `prompt_skills` retrieved lines. Only trusted skills are offered.
- **writes** (create, patch, write_file, remove_file, archive, restore, approve, pin, remove):
  through the library, which validates and scans every one, then re-indexed at once. A create
  whose near-duplicate is already in the library (skills/similarity.py) is refused with the
  duplicate's name, so the caller patches it instead.
- **health**: a skill is failing when, after `min_uses` rewarded uses, its success rate with it
  is clearly below comparable turns' without it (see `is_failing`).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from memory import IndexedSkill, MemoryStore, SkillMatch, SkillStats
from skills import (
    DUPLICATE_THRESHOLD,
    Edit,
    SkillDocument,
    SkillError,
    SkillExists,
    SkillFormatError,
    SkillLibrary,
    SkillNotFound,
    Written,
    similarity,
)

CHARS_PER_TOKEN = 3  # conservative: English runs ~4 characters a token, hyphenated names ~3
HEADER = "Skills (skill_view(name) loads one; follow it when it fits):"
WILSON_Z = 1.2816  # one-sided 90%


@dataclass(frozen=True)
class SkillSettings:
    prompt_tokens: int = 600  # the most tokens skill lines may take in a prompt, header included
    prompt_skills: int = 5  # retrieved lines at most (pinned ones come on top, within the budget)
    line_chars: int = 150
    context_messages: int = 4  # recent messages searched besides the request
    sync_interval_s: float = 2.0
    review: bool = True  # the learn stage's review writes and patches skills
    min_tool_calls: int = 3  # a turn with fewer tool calls (and no error overcome) is trivial
    duplicate_threshold: float = DUPLICATE_THRESHOLD
    min_uses: int = 8  # rewarded uses before a skill may be judged failing


@dataclass
class SyncReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    invalid: dict[str, str] = field(default_factory=dict)  # name -> what is wrong with its file


class SkillCatalog:
    def __init__(
        self, library: SkillLibrary, store: MemoryStore, settings: SkillSettings | None = None
    ) -> None:
        self.library = library
        self.store = store
        self.index = store.skills
        self.settings = settings or SkillSettings()
        self._synced_at = -math.inf

    # --- sync --------------------------------------------------------------------------------

    def sync(self, *, force: bool = True) -> SyncReport:
        """Bring the index in step with the files (`force=False`: unless synced recently)."""
        report = SyncReport()
        now = time.monotonic()
        if not force and now - self._synced_at < self.settings.sync_interval_s:
            return report
        self._synced_at = now
        known = self.index.known()
        entries = self.library.entries()
        changed: list[IndexedSkill] = []
        for entry in entries:
            seen = known.get(entry.name)
            if seen is not None and seen[:2] == (entry.mtime_ns, entry.size):
                continue
            try:
                text = (entry.path / "SKILL.md").read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                report.invalid[entry.name] = str(error)
                continue
            digest = hashlib.sha256(text.encode()).hexdigest()
            if seen is not None and seen[2] == digest:
                self.index.touch(entry.name, entry.mtime_ns, entry.size)
                continue
            try:
                document = self.library.load(entry.name)
            except SkillError as error:
                report.invalid[entry.name] = str(error)
                continue
            changed.append(_indexed(document, entry.mtime_ns, entry.size, digest))
            (report.updated if seen is not None else report.added).append(entry.name)
        self.index.upsert(changed)
        valid = {entry.name for entry in entries} - set(report.invalid)
        report.removed = sorted(set(known) - valid)
        self.index.remove(report.removed)
        return report

    def _reindex(self, name: str) -> None:
        self.sync()
        if name in self.library.names() and self.index.get(name) is None:
            raise SkillError(f"skill {name!r} was written but could not be indexed")

    # --- retrieval ---------------------------------------------------------------------------

    def prompt_lines(self, request: str, recent: Sequence[str] = ()) -> list[tuple[str, str]]:
        """The skills to list in this turn's prompt as (name, one line), within the budget."""
        self.sync(force=False)
        if self.index.count() == 0:
            return []
        settings = self.settings
        context = " ".join(recent[-settings.context_messages :]) if settings.context_messages else ""
        found = self.index.search(request, context=context, limit=settings.prompt_skills)
        chosen = {match.name: match for match in self.index.pinned()}
        for match in found:
            chosen.setdefault(match.name, match)
        budget = settings.prompt_tokens - estimate_tokens(HEADER)
        lines = []
        for match in chosen.values():
            line = one_line(match.description, settings.line_chars)
            cost = estimate_tokens(f"- {match.name}: {line}")
            if cost > budget:
                break
            budget -= cost
            lines.append((match.name, line))
        return lines

    def offer(
        self, episode_id: int | None, request: str, recent: Sequence[str] = ()
    ) -> list[tuple[str, str]]:
        """`prompt_lines`, recorded as offered to the turn's episode (the comparison group of
        each skill's outcomes is the turns it was offered to and not opened in)."""
        lines = self.prompt_lines(request, recent)
        if episode_id is not None and lines:
            self.index.record_offered(episode_id, [name for name, _ in lines])
        return lines

    def search(self, query: str, limit: int = 5) -> list[SkillMatch]:
        self.sync(force=False)
        return self.index.search(query, limit=limit)

    def view(self, name: str, file: str | None = None, *, episode_id: int | None = None) -> str:
        """A skill's SKILL.md (or one of its files) for the planner; the view is recorded."""
        self.sync(force=False)
        indexed = self.index.get(name)
        if indexed is None:
            raise SkillNotFound(f"no skill named {name!r}; skills_search finds skills")
        if indexed.trust != "trusted":
            raise SkillError(
                f"skill {name!r} is not approved yet (the operator runs `temper skills approve {name}`)"
            )
        text = self.library.text(name) if file is None else self.library.read_file(name, file)
        if episode_id is not None:
            self.index.record_viewed(episode_id, name)
        if file is None and (files := self.library.file_names(name)):
            text += "\n\nFiles (skill_view with file=...): " + ", ".join(files)
        return text

    def near_duplicate(self, name: str, description: str, body: str) -> tuple[str, float] | None:
        """The most similar existing skill if it is at or above the duplicate threshold."""
        self.sync(force=False)
        probe = f"{name.replace('-', ' ')} {description}"
        candidates = {
            m.name for m in self.index.search(probe, context=body[:2000], limit=8, trusted_only=False)
        }
        best: tuple[str, float] | None = None
        for candidate in sorted(candidates - {name}):
            try:
                other = self.library.load(candidate)
            except SkillError:
                continue
            score = similarity((name, description, body), (other.name, other.description, other.body))
            if score >= self.settings.duplicate_threshold and (best is None or score > best[1]):
                best = (candidate, score)
        return best

    # --- writes ------------------------------------------------------------------------------

    def create(
        self, document: SkillDocument, *, created_by: str = "agent", episode_id: int | None = None
    ) -> Written:
        duplicate = self.near_duplicate(document.name, document.description, document.body)
        if duplicate is not None:
            raise SkillExists(
                f"skill {duplicate[0]!r} already covers this (similarity {duplicate[1]:.2f}); patch it instead"
            )
        stamped = document.with_metadata(
            created_by=created_by,
            trust="trusted",
            source_episode=None if episode_id is None else str(episode_id),
        )
        written = self.library.create(stamped, note=f"created by {created_by}")
        self._reindex(document.name)
        return written

    def patch(self, name: str, edits: Sequence[Edit], note: str = "patched") -> Written:
        self._require_trusted(name)
        written = self.library.patch(name, edits, note)
        self._reindex(name)
        return written

    def write_file(self, name: str, path: str, content: str) -> Written:
        self._require_trusted(name)
        written = self.library.write_file(name, path, content)
        self._reindex(name)
        return written

    def remove_file(self, name: str, path: str) -> Written:
        self._require_trusted(name)
        written = self.library.remove_file(name, path)
        self._reindex(name)
        return written

    def archive(self, name: str) -> None:
        self.library.archive(name)
        self.sync()

    def restore(self, name: str, version: int | None = None) -> None:
        """From the archive (no version), or back to an earlier version of a skill in use."""
        if version is None:
            self.library.restore(name)
            self.index.clear_health(name)
        else:
            self.library.restore_version(name, version)
        self.sync()

    def approve(self, name: str) -> Written:
        written = self.library.set_metadata(name, "approved by the operator", trust="trusted")
        self._reindex(name)
        return written

    def pin(self, name: str, pinned: bool = True) -> Written:
        written = self.library.set_metadata(
            name, "pinned" if pinned else "unpinned", pinned="true" if pinned else None
        )
        self._reindex(name)
        return written

    def remove(self, name: str) -> None:
        self.library.remove(name)
        self.sync()

    def _require_trusted(self, name: str) -> None:
        document = self.library.load(name)
        if not document.trusted:
            raise SkillError(
                f"skill {name!r} is not approved yet (the operator runs `temper skills approve {name}`)"
            )

    # --- outcomes ----------------------------------------------------------------------------

    def stats(self, name: str) -> SkillStats:
        """The skill's figures since its last revision (all time if never revised)."""
        health = self.index.health(name)
        since = health.since if health is not None and health.state == "revised" else 0.0
        return self.index.stats(name, since)

    def is_failing(self, stats: SkillStats) -> bool:
        """Enough rewarded uses, and even the optimistic end of the success rate with the skill
        (Wilson score, one-sided 90%) lies below the rate of comparable turns without it."""
        if (
            stats.rewarded < self.settings.min_uses
            or stats.success_with is None
            or stats.success_without is None
        ):
            return False
        return wilson_upper(stats.success_with, stats.rewarded) < stats.success_without


def _indexed(document: SkillDocument, mtime_ns: int, size: int, digest: str) -> IndexedSkill:
    return IndexedSkill(
        name=document.name,
        description=document.description,
        body=document.body,
        trust="trusted" if document.trusted else "untrusted",
        pinned=document.pinned,
        mtime_ns=mtime_ns,
        size=size,
        content_hash=digest,
    )


def estimate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def one_line(text: str, limit: int) -> str:
    """`text` on one line, cut at a word boundary to at most `limit` characters."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:.") + "…"


def wilson_upper(rate: float, n: int, z: float = WILSON_Z) -> float:
    """The upper end of the Wilson score interval of a success rate over `n` trials."""
    if n == 0:
        return 1.0
    centre = rate + z * z / (2 * n)
    spread = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n))
    return (centre + spread) / (1 + z * z / n)


def refusal(error: SkillError) -> str:
    """What a refused write says to the model: the format's problems one by one."""
    if isinstance(error, SkillFormatError):
        return "the skill breaks the format: " + "; ".join(str(problem) for problem in error.problems)
    return str(error)
