"""Retrieval quality on the labelled recall set: recall@1/5/10 by question kind.

Loads bench/data/recall_messages.jsonl into a fresh database, asks every question in
bench/data/recall_questions.jsonl as its user, and prints `name: value` lines. The
baseline is plain FTS5 on the same messages: the question's words joined with OR (a raw
question joined with AND finds almost nothing), ranked by bm25, scoped to the user.

    python bench/recall.py [--hybrid]
"""

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memory import MemoryStore, import_jsonl
from memory.jsonl import read_lines

DATA = Path(__file__).resolve().parent / "data"
KS = (1, 5, 10)


def load_questions() -> list[dict]:
    return [
        json.loads(line)
        for line in (DATA / "recall_questions.jsonl").read_text().splitlines()
        if line.strip()
    ]


def recall(ranked: list[list[str]], questions: list[dict]) -> dict[str, dict[int, float]]:
    """recall@k per kind (and 'all'): the share of questions with an answer in the top k."""
    hits: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    totals: dict[str, int] = defaultdict(int)
    for found, question in zip(ranked, questions):
        answers = set(question["answer_ids"])
        for kind in (question["kind"], "all"):
            totals[kind] += 1
            for k in KS:
                hits[kind][k] += bool(answers & set(found[:k]))
    return {kind: {k: hits[kind][k] / totals[kind] for k in KS} for kind in totals}


def baseline_ranking(store: MemoryStore, questions: list[dict]) -> list[list[str]]:
    """Plain FTS5: OR of the question's words, bm25, the user's messages only."""
    import re

    ranked = []
    for question in questions:
        words = re.findall(r"\w+", question["question"].lower())
        expression = " OR ".join(f'"{w}"' for w in words) or '""'
        rows = store.db.execute(
            "select m.external_id from messages_fts f join messages m on m.id = f.rowid"
            " join users u on u.id = m.user_id"
            " where messages_fts match ? and u.handle = ? order by bm25(messages_fts, 1.0, 0.0) limit 10",
            ("{content}: (" + expression + ")", question["user"]),
        ).fetchall()
        ranked.append([row[0] for row in rows])
    return ranked


def print_recall(prefix: str, table: dict[str, dict[int, float]]) -> None:
    for kind in sorted(table):
        for k in KS:
            print(f"{prefix}_{kind}_recall@{k}: {table[kind][k]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--hybrid", action="store_true", help="also measure BM25 + embeddings (extra `embeddings`)"
    )
    args = parser.parse_args()
    questions = load_questions()
    with tempfile.TemporaryDirectory() as tmp, MemoryStore.open(Path(tmp) / "recall.db") as store:
        report = import_jsonl(store, read_lines(DATA / "recall_messages.jsonl"))
        print(f"messages: {report.added}")
        print(f"questions: {len(questions)}")
        started = time.perf_counter()
        ours = [
            [hit.external_id for hit in store.search(q["question"], user=q["user"], limit=10)]
            for q in questions
        ]
        print(f"lexical_ms_per_question: {(time.perf_counter() - started) * 1000 / len(questions):.2f}")
        print_recall("lexical", recall(ours, questions))
        print_recall("baseline", recall(baseline_ranking(store, questions), questions))
        if args.hybrid:
            import torch

            from memory import SentenceEmbedder, VectorIndex

            torch.set_num_threads(1)
            index = VectorIndex.open(store, SentenceEmbedder.load())
            started = time.perf_counter()
            embedded = index.backfill()
            print(f"embed_messages_per_s: {embedded / (time.perf_counter() - started):.0f}")
            started = time.perf_counter()
            fused = [
                [hit.external_id for hit in index.search(q["question"], user=q["user"], limit=10)]
                for q in questions
            ]
            print(f"hybrid_ms_per_question: {(time.perf_counter() - started) * 1000 / len(questions):.2f}")
            print_recall("hybrid", recall(fused, questions))


if __name__ == "__main__":
    main()
