"""Skills at scale: prompt tokens, retrieval recall and lookup time, against baselines in the same run.

    python bench/skills.py [--repeats 5]

The library (bench/data/skills_domains.toml): 22 domains x 10 procedures = 220 skills written as
one line each and turned into SKILL.md files (description = what + "Use when ..."; body = the steps).
The labelled requests (bench/data/skills_requests.jsonl): 126 requests, each naming the skill
that answers it, written in other words than the skills (a person's phrasing: "oops I committed
before adding the tests"). The 2,000-skill library is those 220 plus 1,780 generated distractors
(deterministic: domain words recombined into plausible procedures) that the requests do not target.

Figures (one `name: value` line each):
    skill_prompt_tokens_{10,200,2000}     the most tokens the prompt's skill section takes over all
                                          requests (tiktoken through litellm), header included
    baseline_whole_index_tokens_*          the whole index in the prompt (what the peer sends)
    skill_retrieval_recall_at_5            the labelled skill among the 5 retrieved (220 skills)
    baseline_fts_or_recall_at_5            a plain FTS5 OR of the request's words, default bm25
    skill_retrieval_recall_at_5_2000       ours again with the 1,780 distractors
    skill_lookup_p99_ms_2000               the index lookup of one request at 2,000 skills
    baseline_fts_or_lookup_p99_ms_2000     the plain OR query's lookup
    near_duplicate_*                       the similarity threshold on skills_duplicates.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from memory import IndexedSkill, MemoryStore
from runtime import SkillCatalog, SkillSettings, count_tokens
from runtime.skill_catalog import HEADER, one_line
from skills import DUPLICATE_THRESHOLD, SkillDocument, SkillLibrary, similarity

DATA = Path(__file__).resolve().parent / "data"


def library_documents() -> list[SkillDocument]:
    domains = tomllib.loads((DATA / "skills_domains.toml").read_text())
    documents = []
    for table in domains.values():
        for line in table["skills"]:
            name, what, when, steps = (part.strip() for part in line.split("|", 3))
            body = "\n" + "".join(f"{i}. {step.strip()}\n" for i, step in enumerate(steps.split(";"), 1))
            documents.append(SkillDocument(name, f"{what}. Use when {when}.", body))
    return documents


def distractors(count: int, seed: int = 7) -> list[IndexedSkill]:
    """Plausible procedures recombined from domain words, none of them a labelled target."""
    rng = random.Random(seed)
    verbs = "configure audit migrate monitor rotate tune document validate archive schedule".split()
    things = (
        "ldap directory|mail relay|print queue|vpn gateway|kafka topic|redis cache|elastic index|"
        "jenkins pipeline|ansible playbook|helm chart|samba share|zfs pool|raid array|ceph cluster|"
        "mqtt broker|graphql schema|oauth client|sso login|webhook endpoint|feature flag|"
        "saml provider|nfs export|bind zone|haproxy frontend|varnish cache|rabbitmq queue"
    ).split("|")
    contexts = (
        "on staging|for the mobile team|in the data center|for compliance|after an outage|per tenant".split(
            "|"
        )
    )
    made = []
    for number in range(count):
        verb, thing, context = rng.choice(verbs), rng.choice(things), rng.choice(contexts)
        name = f"{verb}-{thing.replace(' ', '-')}-{number}"
        description = (
            f"{verb.capitalize()} the {thing} {context}. Use when the {thing} needs attention {context}."
        )
        body = f"1. inspect the {thing} settings\n2. {verb} it {context}\n3. record what changed\n"
        made.append(IndexedSkill(name, description, body, "trusted", False, 0, len(body), f"d{number}"))
    return made


def requests() -> list[tuple[str, str]]:
    lines = (DATA / "skills_requests.jsonl").read_text().splitlines()
    return [(record["request"], record["skill"]) for record in map(json.loads, lines)]


def section(lines: list[tuple[str, str]]) -> str:
    return HEADER + "\n" + "\n".join(f"- {name}: {line}" for name, line in lines) if lines else ""


def tokens(text: str) -> int:
    return count_tokens([{"role": "system", "content": text}]) if text else 0


def plain_or(store: MemoryStore, request: str, limit: int = 5) -> list[str]:
    """The baseline: every word of the request quoted and OR-ed, FTS5's default bm25."""
    words = [w for w in "".join(c if c.isalnum() else " " for c in request.lower()).split() if w]
    if not words:
        return []
    expression = " OR ".join(f'"{w}"' for w in words)
    rows = store.db.execute(
        "select s.name from skills_fts f join skills s on s.id = f.rowid where skills_fts match ?"
        " order by rank limit ?",
        (expression, limit),
    )
    return [row[0] for row in rows]


def p99_ms(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=100)[98] * 1000 if len(samples) >= 2 else samples[0] * 1000


def measure_size(catalog: SkillCatalog, labelled: list[tuple[str, str]], size: int) -> None:
    worst = max(tokens(section(catalog.prompt_lines(request))) for request, _ in labelled)
    whole = tokens(section([(m.name, one_line(m.description, 10_000)) for m in catalog.index.all()]))
    print(f"skill_prompt_tokens_{size}: {worst}")
    print(f"baseline_whole_index_tokens_{size}: {whole}")
    print(f"whole_index_vs_ours_{size}: {whole / max(worst, 1):.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5, help="timed passes over the requests at 2,000")
    parser.add_argument("--total", type=int, default=2000, help="the large library's size")
    args = parser.parse_args()
    documents, labelled = library_documents(), requests()
    print(f"library: {len(documents)} skills in {len({d.name.split('-')[0] for d in documents})} name families;"
          f" requests: {len(labelled)}")  # fmt: skip
    settings = SkillSettings(sync_interval_s=3600)
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        started = time.perf_counter()
        sizes: dict[int, SkillCatalog] = {}
        for size, chosen in ((10, documents[::22][:10]), (len(documents), documents)):
            library = SkillLibrary(root / f"skills-{size}")
            for document in chosen:
                library.create(document)
            catalog = SkillCatalog(library, MemoryStore.open(root / f"memory-{size}.db"), settings)
            catalog.sync()
            sizes[size] = catalog
        print(f"libraries written and indexed: {time.perf_counter() - started:.1f} s")
        measure_size(sizes[10], labelled, 10)
        full = sizes[len(documents)]
        measure_size(full, labelled, 200)

        ours = sum(skill in [m.name for m in full.index.search(r, limit=5)] for r, skill in labelled)
        baseline = sum(skill in plain_or(full.store, r) for r, skill in labelled)
        print(f"skill_retrieval_recall_at_5: {ours / len(labelled):.3f}")
        print(f"baseline_fts_or_recall_at_5: {baseline / len(labelled):.3f}")

        # 2,000: the same 220 plus generated distractors, indexed directly (the lookup is the index's).
        full.index.upsert(distractors(args.total - len(documents)))
        full.library = SkillLibrary(root / "skills-220")  # the distractors have no files: no sync below
        large_ours = sum(skill in [m.name for m in full.index.search(r, limit=5)] for r, skill in labelled)
        print(f"skill_retrieval_recall_at_5_{args.total}: {large_ours / len(labelled):.3f}")
        large_base = sum(skill in plain_or(full.store, r) for r, skill in labelled)
        print(f"baseline_fts_or_recall_at_5_{args.total}: {large_base / len(labelled):.3f}")
        worst = max(tokens(section(full.prompt_lines(request))) for request, _ in labelled)
        whole = tokens(section([(m.name, one_line(m.description, 10_000)) for m in full.index.all()]))
        print(f"skill_prompt_tokens_{args.total}: {worst}")
        print(f"baseline_whole_index_tokens_{args.total}: {whole}")
        print(f"whole_index_vs_ours_{args.total}: {whole / max(worst, 1):.1f}x")
        times, base_times = [], []
        for _ in range(args.repeats):
            for request, _ in labelled:
                begun = time.perf_counter()
                full.index.search(request, limit=5)
                times.append(time.perf_counter() - begun)
                begun = time.perf_counter()
                plain_or(full.store, request)
                base_times.append(time.perf_counter() - begun)
        ours_p99, base_p99 = p99_ms(times), p99_ms(base_times)
        print(f"skill_lookup_p99_ms_{args.total}: {ours_p99:.2f}")
        print(f"baseline_fts_or_lookup_p99_ms_{args.total}: {base_p99:.2f}")
        print(f"lookup_p99_vs_baseline: {ours_p99 / max(base_p99, 1e-9):.2f}")
        near_duplicates(documents)
        for catalog in sizes.values():
            catalog.store.close()


def near_duplicates(documents: list[SkillDocument]) -> None:
    """The threshold on labelled pairs: each paraphrase against its original (duplicate), and
    every pair of distinct skills of the same domain (not duplicates, the hard case)."""
    by_name = {d.name: d for d in documents}
    records = [json.loads(line) for line in (DATA / "skills_duplicates.jsonl").read_text().splitlines()]
    duplicate = [
        similarity((r["name"], r["description"], r["body"]), _triple(by_name[r["of"]])) for r in records
    ]
    distinct = []
    for first in range(0, len(documents), 10):
        group = documents[first : first + 10]
        distinct += [similarity(_triple(a), _triple(b)) for i, a in enumerate(group) for b in group[i + 1 :]]
    distinct += [
        similarity((r["name"], r["description"], r["body"]), _triple(d))
        for r in records
        for d in documents
        if d.name != r["of"] and d.name.split("-")[0] == r["of"].split("-")[0]
    ]
    caught = sum(score >= DUPLICATE_THRESHOLD for score in duplicate) / len(duplicate)
    false = sum(score >= DUPLICATE_THRESHOLD for score in distinct) / len(distinct)
    print(f"near_duplicate_pairs: {len(duplicate)} duplicate, {len(distinct)} distinct")
    print(f"near_duplicate_threshold: {DUPLICATE_THRESHOLD}")
    print(f"near_duplicate_recall: {caught:.3f}")
    print(f"near_duplicate_false_positive_rate: {false:.4f}")
    print(f"near_duplicate_min_duplicate_score: {min(duplicate):.3f}")
    print(f"near_duplicate_max_distinct_score: {max(distinct):.3f}")


def _triple(document: SkillDocument) -> tuple[str, str, str]:
    return document.name, document.description, document.body


if __name__ == "__main__":
    main()
