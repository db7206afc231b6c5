"""Generate the labelled retrieval set for conversational memory: bench/data/recall_*.jsonl.

The question it answers: weeks after someone said something, does memory search find the
message that said it? The set is synthetic, seeded and built from the standard library only, so
`python bench/recall_data.py` rewrites both files byte for byte. The text it is made of (fact
families, vocabularies, filler threads) is in bench/data/recall_templates.toml.

- `recall_messages.jsonl`: ~13 weeks of chat between eight users and the agent, in the import
  format `{"id", "session", "user", "role", "content", "ts"}`, ids in time order; an agent
  message carries the user it answers, and a shared Slack channel mixes four users. Most of it
  is filler conversation stitched from short coherent threads (cooking, code, travel, work...)
  whose slots are filled from shared vocabularies. Planted among it are fact messages (a
  `Family` of phrasings filled with per-user values), each with distractors: messages by the
  same user that share words with the fact but do not answer it. Most families are planted for
  two to four users with different values, so a search that ignores the asking user finds the
  wrong person's fact.
- `recall_questions.jsonl`: one question per fact, plus paraphrase variants for some,
  `{"question", "user", "answer_ids", "kind"}`. Kinds, by how the question overlaps the fact
  after stop words and porter stemming:
    lexical    every content word of the question is in the fact (word forms may differ)
    partial    some are, some are not: an AND of all words finds nothing
    semantic   at most one is; the rest is synonyms or paraphrase ("sibling" for "sister")
    substring  an identifier fragment that sits inside one token of the fact ("8007" in
               "0x80070005"): needs a trigram index
  `--check` verifies these labels against real FTS5 porter and trigram indexes (needs apsw)
  and prints plain bm25 baselines per kind: own user vs all users, stemming vs none, OR vs AND.

Invariants: answers are always user messages of the asking user, stated before the question
would be asked; the assistant's acknowledgements never repeat the fact's values.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import tomllib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import apsw  # only --check needs it; generating is stdlib only

SEED = 20261101
START = datetime(2026, 7, 6, tzinfo=UTC)
DAYS = 91
DATA_DIR = Path(__file__).resolve().parent / "data"
MESSAGES_FILE = DATA_DIR / "recall_messages.jsonl"
QUESTIONS_FILE = DATA_DIR / "recall_questions.jsonl"
TEMPLATES_FILE = DATA_DIR / "recall_templates.toml"
KINDS = ("lexical", "partial", "semantic", "substring")
KIND_TARGETS = {"lexical": 0.34, "partial": 0.26, "semantic": 0.28, "substring": 0.12}


@dataclass(frozen=True)
class User:
    name: str
    platform: str
    hours: tuple[int, ...]  # hours of day (UTC) they tend to chat
    sessions: int


USERS = (
    User("ana", "telegram", (7, 8, 12, 19, 20, 21, 22), 72),
    User("ben", "slack", (9, 10, 11, 14, 15, 16, 17), 76),
    User("chen", "cli", (10, 13, 16, 21, 22, 23, 0), 70),
    User("dara", "slack", (8, 9, 10, 13, 14, 15, 18), 74),
    User("emeka", "telegram", (6, 7, 12, 18, 19, 20), 66),
    User("farah", "telegram", (9, 11, 15, 20, 21, 22), 70),
    User("gus", "cli", (14, 15, 16, 22, 23, 0, 1), 64),
    User("hana", "slack", (8, 9, 11, 13, 16, 17), 74),
)
TEAM = ("ben", "dara", "hana", "chen")  # share a Slack channel with the agent
TEAM_SESSIONS = 30


# --------------------------------------------------------------------------------------------
# The text it is made of: bench/data/recall_templates.toml (its header says what each part is).
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    """A thing people tell an assistant and ask about weeks later: a [[family]] of the templates."""

    key: str
    slots: dict[str, tuple[str, ...]]
    facts: tuple[str, ...]
    questions: dict[str, tuple[str, ...]]  # kind -> templates
    distractors: tuple[str, ...]
    acks: tuple[str, ...]
    work: bool  # may be said in the team channel


@dataclass(frozen=True)
class Thread:
    topic: str
    exchanges: tuple[tuple[str, str], ...]  # (user text, agent reply)


def parse_threads(text: str) -> tuple[Thread, ...]:
    threads: list[Thread] = []
    topic = ""
    for block in text.strip().split("\n\n"):
        lines = [line for line in block.splitlines() if line.strip()]
        if lines and lines[0].startswith("# "):
            topic = lines.pop(0)[2:]
        turns = [line[3:] for line in lines]
        if [line[:3] for line in lines] != ["U: ", "A: "] * (len(lines) // 2) or len(lines) % 2:
            raise ValueError(f"thread must alternate 'U: ' and 'A: ' lines: {block!r}")
        threads.append(Thread(topic, tuple(zip(turns[::2], turns[1::2]))))
    return tuple(threads)


def load_templates(path: Path) -> dict[str, Any]:
    """The templates file, with each family's keys checked: a misspelt kind would vanish silently."""
    templates = tomllib.loads(path.read_text(encoding="utf-8"))
    known = {"key", "work", "slots", "facts", "distractors", "acks", *KINDS}
    for table in templates["family"]:
        if unknown := sorted(set(table) - known):
            raise ValueError(f"{path.name}: family {table['key']!r} has unknown keys {unknown}")
    return templates


def value_list(value: str | list[str], shared: dict[str, list[str]]) -> tuple[str, ...]:
    """A list of values as given, or the [shared] list it names."""
    return tuple(shared[value] if isinstance(value, str) else value)


def parse_family(table: dict[str, Any], shared: dict[str, list[str]]) -> Family:
    return Family(
        table["key"],
        {slot: value_list(v, shared) for slot, v in table.get("slots", {}).items()},
        tuple(table["facts"]),
        {kind: tuple(table[kind]) for kind in KINDS if table.get(kind)},
        tuple(table["distractors"]),
        tuple(table["acks"]),
        table.get("work", False),
    )


TEMPLATES = load_templates(TEMPLATES_FILE)
SHARED: dict[str, list[str]] = TEMPLATES["shared"]
FAMILIES = tuple(parse_family(table, SHARED) for table in TEMPLATES["family"])
VOCAB = {name: value_list(v, SHARED) for name, v in TEMPLATES["vocab"].items()}
THREAD_LIST = parse_threads(TEMPLATES["filler"]["threads"])
WORK_TOPICS = tuple(TEMPLATES["filler"]["work_topics"])
FACT_LEADS, FACT_TAILS, DISTRACTOR_REPLIES, QUESTION_WRAPS, USER_LEADS, USER_CLOSERS, AGENT_CLOSERS = (
    tuple(TEMPLATES["phrases"][name])
    for name in (
        "fact_leads", "fact_tails", "distractor_replies", "question_wraps", "user_leads",
        "user_closers", "agent_closers",
    )
)  # fmt: skip


class Slots(dict[str, str]):
    """A format_map mapping that draws missing slots from VOCAB (or a family's values) and keeps them."""

    def __init__(
        self, rng: random.Random, fixed: dict[str, str] | None = None, family: Family | None = None
    ) -> None:
        super().__init__(fixed or {})
        self.rng = rng
        self.family = family

    def __missing__(self, key: str) -> str:
        if key.startswith("other_") and self.family is not None:
            slot = key.removeprefix("other_")
            pool = [v.split("|")[0] for v in self.family.slots[slot]]
        else:
            slot = key.rstrip("0123456789")
            pool = list(VOCAB[slot])
        taken = {self.get(slot), *(v for k, v in self.items() if k.rstrip("0123456789") == slot)}
        value = self.rng.choice([v for v in pool if v not in taken] or pool)
        self[key] = value
        return value


@dataclass
class Fact:
    family: Family
    user: str
    values: dict[str, str]
    text: str
    message_id: str = ""


@dataclass
class Exchange:
    user: str
    text: str
    reply: str
    fact: Fact | None = None


@dataclass
class Session:
    key: str
    users: tuple[str, ...]
    start: datetime
    exchanges: list[Exchange] = field(default_factory=list)


def fill(template: str, slots: Slots) -> str:
    return template.format_map(slots)


def plan_sessions(rng: random.Random) -> list[Session]:
    sessions: list[Session] = []
    for user in USERS:
        starts = sorted(
            START
            + timedelta(
                days=rng.randrange(DAYS),
                hours=rng.choice(user.hours),
                minutes=rng.randrange(60),
                seconds=rng.randrange(60),
            )
            for _ in range(user.sessions)
        )
        sessions += [
            Session(f"{user.platform}-{user.name}-{i:03d}", (user.name,), start)
            for i, start in enumerate(starts, 1)
        ]
    workdays = [d for d in range(DAYS) if (START + timedelta(days=d)).weekday() < 5]
    team_days = sorted(rng.sample(workdays, TEAM_SESSIONS))
    sessions += [
        Session(
            f"slack-team-{i:03d}",
            TEAM,
            START + timedelta(days=d, hours=rng.choice((9, 10, 14, 15)), minutes=rng.randrange(60)),
        )
        for i, d in enumerate(team_days, 1)
    ]
    return sessions


def assign_facts(rng: random.Random) -> list[Fact]:
    load = Counter({user.name: 0 for user in USERS})
    facts: list[Fact] = []
    for fam in FAMILIES:
        # Users of one family get distinct values; a one-value slot (a year) is shared.
        most = min((len(values) for values in fam.slots.values() if len(values) > 1), default=4)
        count = min(rng.choice((2, 3, 3, 3, 4)), most)
        users = sorted(load, key=lambda name: (load[name], rng.random()))[:count]
        drawn = {
            slot: rng.sample(values, count) if len(values) > 1 else [values[0]] * count
            for slot, values in fam.slots.items()
        }
        for i, user in enumerate(users):
            load[user] += 1
            values: dict[str, str] = {}
            for slot, picks in drawn.items():
                value, _, part = picks[i].partition("|")
                values[slot] = value
                if part:
                    values[f"{slot}_part"] = part
            phrasing = rng.randrange(len(fam.facts))
            text = fill(fam.facts[phrasing], Slots(rng, values, fam))
            lead = rng.choice(FACT_LEADS) if phrasing == 0 else ""  # the other phrasings carry their own
            text = lead + (text[0].lower() + text[1:] if lead and text[1:2].islower() else text)
            text += rng.choice(FACT_TAILS)
            facts.append(Fact(fam, user, values, text))
    return facts


def plant(rng: random.Random, sessions: list[Session], facts: list[Fact]) -> None:
    """Put each fact in an early session of its user, and its distractors anywhere in that user's history."""
    cutoff = START + timedelta(days=DAYS * 0.8)
    for fact in facts:
        own = [s for s in sessions if s.users == (fact.user,)]
        team = [s for s in sessions if len(s.users) > 1 and fact.user in s.users]
        early = [
            s for s in (team if fact.family.work and team and rng.random() < 0.5 else own) if s.start < cutoff
        ]
        rng.choice(early).exchanges.append(Exchange(fact.user, fact.text, rng.choice(fact.family.acks), fact))
        anywhere = own + team if fact.family.work else own
        for template in fact.family.distractors:
            slots = Slots(rng, dict(fact.values), fact.family)
            text, _, reply = fill(template, slots).partition("||")
            rng.choice(anywhere).exchanges.append(
                Exchange(fact.user, text, reply or rng.choice(DISTRACTOR_REPLIES))
            )


def vary(rng: random.Random, template: str, opener: bool) -> str:
    """Small surface changes so that one thread asked by two people rarely reads identically."""
    if template[1:2].islower() or template[1:2] == " ":  # not a slot, acronym or name in capitals
        if rng.random() < 0.35 or (opener and rng.random() < 0.3):
            template = template[0].lower() + template[1:]
            if opener:
                template = rng.choice(USER_LEADS) + template
    if rng.random() < 0.15 and template.endswith("?"):
        template = template[:-1]
    return template


def converse(rng: random.Random, sessions: list[Session]) -> None:
    """Fill every session with filler threads; planted exchanges go between threads, never inside one."""
    used: dict[str, set[int]] = {user.name: set() for user in USERS}
    work = [i for i, t in enumerate(THREAD_LIST) if t.topic in WORK_TOPICS]
    for session in sorted(sessions, key=lambda s: s.start):
        blocks: list[list[Exchange]] = []
        here: set[int] = set()
        for _ in range(rng.choice((1, 2, 2, 2, 3, 3, 4)) if len(session.users) == 1 else 5):
            speaker = rng.choice(session.users)
            pool = [i for i in (work if len(session.users) > 1 else range(len(THREAD_LIST))) if i not in here]
            fresh = [i for i in pool if i not in used[speaker]] or pool
            index = rng.choice(fresh)
            used[speaker].add(index)
            here.add(index)
            thread = THREAD_LIST[index]
            length = rng.choice(
                (len(thread.exchanges), len(thread.exchanges), rng.randint(1, len(thread.exchanges)))
            )
            slots = Slots(rng)
            block = [
                Exchange(speaker, fill(vary(rng, text, opener=i == 0), slots), fill(reply, slots))
                for i, (text, reply) in enumerate(thread.exchanges[:length])
            ]
            if rng.random() < 0.3:
                block.append(Exchange(speaker, rng.choice(USER_CLOSERS), rng.choice(AGENT_CLOSERS)))
            blocks.append(block)
        for exchange in session.exchanges:
            blocks.insert(rng.randint(0, len(blocks)), [exchange])
        session.exchanges = [exchange for block in blocks for exchange in block]


def render(rng: random.Random, sessions: list[Session]) -> list[dict[str, str]]:
    """Timestamp every message, order all of them by time and number them."""
    timed: list[tuple[datetime, int, dict[str, str], Fact | None]] = []
    for session in sessions:
        clock = session.start
        for exchange in session.exchanges:
            clock += timedelta(seconds=rng.randint(15, 240))
            timed.append(
                (
                    clock,
                    len(timed),
                    {"session": session.key, "user": exchange.user, "role": "user", "content": exchange.text},
                    exchange.fact,
                )
            )
            clock += timedelta(seconds=rng.randint(2, 30))
            timed.append(
                (
                    clock,
                    len(timed),
                    {
                        "session": session.key,
                        "user": exchange.user,
                        "role": "assistant",
                        "content": exchange.reply,
                    },
                    None,
                )
            )
    messages: list[dict[str, str]] = []
    for number, (clock, _, record, fact) in enumerate(sorted(timed, key=lambda row: row[:2]), 1):
        message_id = f"m{number:06d}"
        if fact is not None:
            fact.message_id = message_id
        messages.append({"id": message_id, **record, "ts": clock.strftime("%Y-%m-%dT%H:%M:%SZ")})
    return messages


def ask(rng: random.Random, facts: list[Fact]) -> list[dict[str, object]]:
    """One question per fact, of the kind furthest below its target share; a paraphrase for some."""
    counts = Counter({kind: 0 for kind in KINDS})
    questions: list[dict[str, object]] = []
    for fact in facts:
        available = sorted(
            fact.family.questions, key=lambda kind: (counts[kind] / KIND_TARGETS[kind], KINDS.index(kind))
        )
        kinds = available[:2] if len(available) > 1 and rng.random() < 0.22 else available[:1]
        for kind in kinds:
            counts[kind] += 1
            q = fill(rng.choice(fact.family.questions[kind]), Slots(rng, dict(fact.values), fact.family))
            text = rng.choice(QUESTION_WRAPS).format(q=q, Q=q[0].upper() + q[1:], q_=q.rstrip("?"))
            questions.append(
                {"question": text, "user": fact.user, "answer_ids": [fact.message_id], "kind": kind}
            )
    return questions


def generate(seed: int = SEED) -> tuple[list[dict[str, str]], list[dict[str, object]]]:
    rng = random.Random(seed)
    sessions = plan_sessions(rng)
    facts = assign_facts(rng)
    plant(rng, sessions, facts)
    converse(rng, sessions)
    messages = render(rng, sessions)
    return messages, ask(rng, facts)


def write_jsonl(path: Path, rows: Sequence[dict[str, object]] | Sequence[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


# --------------------------------------------------------------------------------------------
# --check: are the kinds true of the data? Uses a real FTS5 index (apsw), not the stdlib.
# --------------------------------------------------------------------------------------------

STOP_WORDS = frozenset(
    """a an the is are was were be been being am do does did doing i me my mine we us our you
your it its to of in on at for with from by about as and or but if so what whats which who whom whose where when
how why that this these those there s t m ll re ve d again remind hey quick one say said tell know can could should
would will have has had any now up her his she he they them their much many get""".split()
)


def content_terms(question: str) -> list[str]:
    words = re.findall(r"[^\W_]+", question.lower())
    return list(dict.fromkeys(w for w in words if w not in STOP_WORDS))


def index(messages: list[dict], tokenizers: dict[str, str]) -> apsw.Connection:
    """An in-memory table of the messages with one external-content FTS5 index per tokenizer."""
    import apsw

    db = apsw.Connection(":memory:")
    db.execute("create table m(id text, user text, content text)")
    for name, tokenizer in tokenizers.items():
        db.execute(f"create virtual table {name} using fts5(content, content='m', tokenize='{tokenizer}')")
    with db:
        db.executemany(
            "insert into m(rowid, id, user, content) values (?, ?, ?, ?)",
            [(i, m["id"], m["user"], m["content"]) for i, m in enumerate(messages, 1)],
        )
        for name in tokenizers:
            db.execute(f"insert into {name}({name}) values ('rebuild')")
    return db


def check(messages: list[dict], questions: list[dict]) -> list[str]:
    """Return one line per question whose kind its overlap with the answer does not support."""
    db = index(messages, {"words": "porter unicode61 remove_diacritics 2", "grams": "trigram"})
    rowid = {m["id"]: i for i, m in enumerate(messages, 1)}

    def hits(table: str, term: str, row: int) -> bool:
        return (
            db.execute(
                f"select 1 from {table} where {table} match ? and rowid = ?", (f'"{term}"', row)
            ).fetchone()
            is not None
        )

    problems: list[str] = []
    for q in questions:
        row = rowid[q["answer_ids"][0]]
        answer = messages[row - 1]
        if answer["user"] != q["user"] or answer["role"] != "user":
            problems.append(f"answer is not a message of the asking user: {q}")
        terms = content_terms(q["question"])
        present = [t for t in terms if hits("words", t, row)]
        missing = [t for t in terms if t not in present]
        fragments = [t for t in missing if len(t) >= 3 and hits("grams", t, row)]
        ok = {
            "lexical": bool(terms) and not missing,
            "partial": len(present) >= 2 and bool(missing),
            "semantic": len(present) <= 1 and bool(missing),
            "substring": bool(fragments),
        }[q["kind"]]
        if not ok:
            problems.append(
                f"{q['kind']}: {q['question']!r} present={present} missing={missing} "
                f"fragments={fragments} answer={answer['content']!r}"
            )
    return problems


def baseline(messages: list[dict], questions: list[dict]) -> None:
    """Plain FTS5 bm25 under a few designs: the floor a real search must beat, and what each choice is worth."""
    db = index(messages, {"porter": "porter unicode61 remove_diacritics 2", "plain": "unicode61"})
    designs = {
        "porter OR, own user": ("porter", " OR ", True),
        "porter OR, all users": ("porter", " OR ", False),
        "no stemming OR, own user": ("plain", " OR ", True),
        "porter AND, own user": ("porter", " ", True),
    }
    for design, (table, joiner, scoped) in designs.items():
        ranks: dict[str, list[int]] = {kind: [] for kind in (*KINDS, "all")}
        for q in questions:
            match = joiner.join(f'"{t}"' for t in content_terms(q["question"]))
            found = [
                r[0]
                for r in db.execute(
                    f"select m.id from {table} join m on m.rowid = {table}.rowid where {table} match ? "
                    f"and (m.user = ? or not ?) order by bm25({table}) limit 10",
                    (match, q["user"], scoped),
                )
            ]
            rank = next((i for i, mid in enumerate(found) if mid in q["answer_ids"]), 10)
            ranks[q["kind"]].append(rank)
            ranks["all"].append(rank)
        for kind, values in ranks.items():
            recall = "  ".join(f"@{k}={sum(r < k for r in values) / len(values):.2f}" for k in (1, 5, 10))
            print(f"baseline {design:25} {kind:9} n={len(values):3}  recall {recall}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="verify kinds against an FTS5 index (needs apsw)"
    )
    args = parser.parse_args()
    messages, questions = generate()
    write_jsonl(MESSAGES_FILE, messages)
    write_jsonl(QUESTIONS_FILE, questions)
    kinds = Counter(q["kind"] for q in questions)
    facts = len({q["answer_ids"][0] for q in questions})
    print(
        f"wrote {len(messages)} messages ({MESSAGES_FILE.stat().st_size / 1e6:.2f} MB), {facts} facts, "
        f"{len(questions)} questions: " + ", ".join(f"{k} {kinds[k]}" for k in KINDS)
    )
    if args.check:
        problems = check(messages, questions)
        print("\n".join(problems) or "kinds: all consistent with the FTS5 index")
        baseline(messages, questions)
        raise SystemExit(1 if problems else 0)


if __name__ == "__main__":
    main()
