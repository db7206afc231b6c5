"""The skill index (`store.skills`): skills searchable by name, description and body, which
turns saw which skill, and how those turns went.

The SKILL.md files on disk are the source of truth; this index mirrors them (the runtime's sync
compares each file's mtime and size, then its content hash, and upserts or removes rows here).
Archived skills have no row: they leave the index and the prompt, and come back on restore.

Outcomes, not counts. Each chat turn records the skills it was offered (listed in its prompt)
and the ones it viewed (opened with skill_view), keyed by its episode, whose reward is ranked
user > verifier > judge (memory/episodes.py). A turn *succeeded* when its reward is at least
SUCCESS_REWARD (the judge's "partly done" 0.5 is not a success). Per skill:

    uses              turns that viewed it
    success_with      the success rate of those of them that have a reward
    success_without   the success rate of *comparable* turns without it: turns the skill was
                      offered to (the index judged it relevant to the request) that did not
                      open it. When fewer than MIN_COMPARABLE such turns exist, all rewarded chat
                      turns over the same period stand in (`baseline` says which was used).

`since` limits the uses counted to those after a time (a revised skill is judged on its new
uses); the comparison is over all time, since a revision does not change the turns without it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from .query import STOP_WORDS, Term, any_of, parse_query
from .writer import Writer

SUCCESS_REWARD = 0.75
MIN_COMPARABLE = 5
CONTEXT_WEIGHT = 0.35  # a term from the recent turns counts this much of one from the request
CANDIDATES = 40
COLUMN_WEIGHTS = (2.0, 2.0, 1.0)  # name, description, body (bench/skills.py: 0.937 at 4/2/1)
# Words that ask for help rather than say with what: they match every skill's body.
REQUEST_WORDS = frozenset(
    "need want help trying try way ways get make use using work working also could would like "
    "something thing things instead keep keeps best quick quickly possible".split()
)


@dataclass(frozen=True)
class IndexedSkill:
    name: str
    description: str
    body: str
    trust: str  # 'trusted' or 'untrusted'
    pinned: bool
    mtime_ns: int
    size: int
    content_hash: str


@dataclass(frozen=True)
class SkillMatch:
    name: str
    description: str
    score: float
    pinned: bool
    trust: str


@dataclass(frozen=True)
class SkillStats:
    name: str
    uses: int  # turns that viewed it
    rewarded: int  # of those, turns with a reward
    success_with: float | None
    comparable: int  # the turns the comparison rests on
    success_without: float | None
    baseline: str  # 'offered-not-viewed', 'all-turns' or 'none'


@dataclass(frozen=True)
class SkillHealth:
    name: str
    state: str  # 'flagged', 'revised' or 'archived'
    changed_at: float
    since: float  # uses after this time decide the next step
    note: str


class SkillIndex:
    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self._db = writer.db

    # --- the mirror of the files -----------------------------------------------------------

    def known(self) -> dict[str, tuple[int, int, str]]:
        """name -> (mtime_ns, size, content hash) of every indexed skill."""
        rows = self._db.execute("select name, file_mtime_ns, file_size, content_hash from skills")
        return {name: (mtime, size, digest) for name, mtime, size, digest in rows}

    def upsert(self, skills: Iterable[IndexedSkill]) -> int:
        count = 0
        with self._writer.writing() as db:
            for skill in skills:
                db.execute(
                    "insert into skills(name, description, body, trust, pinned, file_mtime_ns, file_size,"
                    " content_hash, indexed_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " on conflict(name) do update set description = excluded.description,"
                    " body = excluded.body, trust = excluded.trust, pinned = excluded.pinned,"
                    " file_mtime_ns = excluded.file_mtime_ns, file_size = excluded.file_size,"
                    " content_hash = excluded.content_hash, indexed_at = excluded.indexed_at",
                    (
                        skill.name, skill.description, skill.body, skill.trust, int(skill.pinned),
                        skill.mtime_ns, skill.size, skill.content_hash, time.time(),
                    ),
                )  # fmt: skip
                count += 1
        return count

    def touch(self, name: str, mtime_ns: int, size: int) -> None:
        """A file whose stat changed but whose content did not: remember the new stat."""
        with self._writer.writing() as db:
            db.execute(
                "update skills set file_mtime_ns = ?, file_size = ? where name = ?", (mtime_ns, size, name)
            )

    def remove(self, names: Iterable[str]) -> int:
        with self._writer.writing() as db:
            removed = 0
            for name in names:
                db.execute("delete from skills where name = ?", (name,))
                removed += db.changes()
        return removed

    def get(self, name: str) -> SkillMatch | None:
        row = self._db.execute(
            "select name, description, 0.0, pinned, trust from skills where name = ?", (name,)
        ).fetchone()
        return None if row is None else SkillMatch(row[0], row[1], row[2], bool(row[3]), row[4])

    def all(self) -> list[SkillMatch]:
        rows = self._db.execute("select name, description, 0.0, pinned, trust from skills order by name")
        return [
            SkillMatch(name, text, score, bool(pinned), trust) for name, text, score, pinned, trust in rows
        ]

    def count(self) -> int:
        return self._db.execute("select count(*) from skills").fetchone()[0]

    # --- retrieval ---------------------------------------------------------------------------

    def search(
        self, text: str, *, context: str = "", limit: int = 5, trusted_only: bool = True
    ) -> list[SkillMatch]:
        """Skills for a request, best first: BM25 over name (x2), description (x2) and body of an
        OR of the request's words, plus CONTEXT_WEIGHT x the same for words of the recent turns."""
        scores: dict[str, float] = {}
        found: dict[str, SkillMatch] = {}
        for source, weight in ((text, 1.0), (context, CONTEXT_WEIGHT)):
            terms = request_terms(source)
            if not terms:
                continue
            for match in self._match(any_of(terms), trusted_only):
                scores[match.name] = scores.get(match.name, 0.0) + weight * match.score
                found.setdefault(match.name, match)
        ranked = sorted(scores, key=lambda name: -scores[name])[:limit]
        return [
            SkillMatch(name, found[name].description, scores[name], found[name].pinned, found[name].trust)
            for name in ranked
        ]

    def _match(self, expression: str, trusted_only: bool) -> list[SkillMatch]:
        trust = " and s.trust = 'trusted'" if trusted_only else ""
        # `rank match 'bm25(...)'` lets FTS5 rank by the weighted bm25 once, in its own sort.
        rows = self._db.execute(
            "select s.name, s.description, -f.rank, s.pinned, s.trust from skills_fts f"
            f" join skills s on s.id = f.rowid where skills_fts match ? and f.rank match ?{trust}"
            " order by f.rank limit ?",
            (expression, "bm25({}, {}, {})".format(*COLUMN_WEIGHTS), CANDIDATES),
        ).fetchall()
        return [SkillMatch(name, text, score, bool(pinned), t) for name, text, score, pinned, t in rows]

    def pinned(self, *, trusted_only: bool = True) -> list[SkillMatch]:
        trust = " and trust = 'trusted'" if trusted_only else ""
        rows = self._db.execute(
            f"select name, description, 0.0, pinned, trust from skills where pinned = 1{trust} order by name"
        )
        return [SkillMatch(name, text, score, True, t) for name, text, score, _, t in rows]

    # --- uses and outcomes -------------------------------------------------------------------

    def record_offered(self, episode_id: int, names: Iterable[str]) -> None:
        now = time.time()
        with self._writer.writing() as db:
            db.executemany(
                "insert or ignore into skill_uses(episode_id, skill, viewed, at) values (?, ?, 0, ?)",
                [(episode_id, name, now) for name in names],
            )

    def record_viewed(self, episode_id: int, name: str) -> None:
        with self._writer.writing() as db:
            db.execute(
                "insert into skill_uses(episode_id, skill, viewed, at) values (?, ?, 1, ?)"
                " on conflict(episode_id, skill) do update set viewed = 1",
                (episode_id, name, time.time()),
            )

    def viewed_in(self, episode_id: int) -> list[str]:
        rows = self._db.execute(
            "select skill from skill_uses where episode_id = ? and viewed = 1 order by skill", (episode_id,)
        )
        return [row[0] for row in rows]

    def offered_in(self, episode_id: int) -> list[str]:
        rows = self._db.execute(
            "select skill from skill_uses where episode_id = ? order by skill", (episode_id,)
        )
        return [row[0] for row in rows]

    def stats(self, name: str, since: float = 0.0) -> SkillStats:
        uses, rewarded, successes = self._db.execute(
            "select count(*), count(e.reward), coalesce(sum(e.reward >= ?), 0) from skill_uses u"
            " join episodes e on e.id = u.episode_id where u.skill = ? and u.viewed = 1 and u.at >= ?",
            (SUCCESS_REWARD, name, since),
        ).fetchone()
        comparable, wins = self._db.execute(
            "select count(e.reward), coalesce(sum(e.reward >= ?), 0) from skill_uses u"
            " join episodes e on e.id = u.episode_id where u.skill = ? and u.viewed = 0",
            (SUCCESS_REWARD, name),
        ).fetchone()
        baseline = "offered-not-viewed"
        if comparable < MIN_COMPARABLE:
            comparable, wins = self._db.execute(
                "select count(reward), coalesce(sum(reward >= ?), 0) from episodes e"
                " where kind = 'chat' and not exists (select 1 from skill_uses u"
                " where u.episode_id = e.id and u.skill = ? and u.viewed = 1)",
                (SUCCESS_REWARD, name),
            ).fetchone()
            baseline = "all-turns" if comparable else "none"
        return SkillStats(
            name,
            uses,
            rewarded,
            successes / rewarded if rewarded else None,
            comparable,
            wins / comparable if comparable else None,
            baseline,
        )

    def used_skills(self) -> list[str]:
        """Every skill name any turn has viewed (archived and removed ones included)."""
        return [row[0] for row in self._db.execute("select distinct skill from skill_uses where viewed = 1")]

    def failing_requests(self, name: str, since: float = 0.0, limit: int = 5) -> list[tuple[str, str]]:
        """(request, reward reason) of recent turns that viewed the skill and did not succeed."""
        rows = self._db.execute(
            "select e.task, coalesce(e.reward_reason, '') from skill_uses u join episodes e on e.id = u.episode_id"
            " where u.skill = ? and u.viewed = 1 and u.at >= ? and e.reward < ? order by e.id desc limit ?",
            (name, since, SUCCESS_REWARD, limit),
        )
        return [(task, reason) for task, reason in rows]

    # --- health: flagged, revised, archived ----------------------------------------------------

    def health(self, name: str) -> SkillHealth | None:
        row = self._db.execute(
            "select skill, state, changed_at, since, note from skill_health where skill = ?", (name,)
        ).fetchone()
        return None if row is None else SkillHealth(*row)

    def set_health(self, name: str, state: str, note: str, *, since: float | None = None) -> None:
        now = time.time()
        with self._writer.writing() as db:
            db.execute(
                "insert into skill_health(skill, state, changed_at, since, note) values (?, ?, ?, ?, ?)"
                " on conflict(skill) do update set state = excluded.state, changed_at = excluded.changed_at,"
                " since = excluded.since, note = excluded.note",
                (name, state, now, now if since is None else since, note),
            )

    def clear_health(self, name: str) -> None:
        with self._writer.writing() as db:
            db.execute("delete from skill_health where skill = ?", (name,))


def request_terms(text: str) -> list[Term]:
    """The words of a request worth searching skills for (stop words and help-asking words
    dropped; at most 16, in order)."""
    parsed = parse_query(text)
    return [
        term
        for term in parsed.terms
        if term.kind != "word" or (term.text not in REQUEST_WORDS and term.text not in STOP_WORDS)
    ]
