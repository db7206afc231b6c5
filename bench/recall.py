"""Retrieval quality: recall@1/5/10 of the message that answers each question.

Two data sets, one command:
- default: the labelled set in bench/data (recall_messages.jsonl, recall_questions.jsonl;
  see recall_data.py), figures by question kind;
- `--data FILE`: any file in the LoCoMo layout (a list of samples, each with `conversation`
  and `qa`; see bench/locomo.py for how conversations become temper messages), questions of
  categories 1-4, figures overall, by category and, with `--split IDS`, for the conversations
  named (the ones a method was chosen on) and the rest apart.

Everything is asked through the real search (`MemoryStore.search`, and `VectorIndex.search`
for hybrid) as the asking user. The baseline, in the same run, is plain FTS5: the question's
words joined with OR (a raw question joined with AND finds almost nothing), ranked by bm25,
scoped to the user. Prints `name: value` lines, latency percentiles per mode included.

    python bench/recall.py [--hybrid]
    python bench/recall.py --data ../shared/data/locomo-dev/locomo-dev.json [--lexical-only]
"""

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.locomo import load_locomo
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


def timed_ranking(search, questions: list[dict]) -> tuple[list[list[str]], list[float]]:
    """Each question's top-10 external ids from `search(question) -> hits`, and ms per question."""
    ranked, times = [], []
    for question in questions:
        started = time.perf_counter()
        hits = search(question)
        times.append((time.perf_counter() - started) * 1000)
        ranked.append([hit if isinstance(hit, str) else hit.external_id for hit in hits])
    return ranked, times


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def open_hybrid(store: MemoryStore):
    """A VectorIndex over every stored message, or None (saying why) without the extra."""
    try:
        import torch

        from memory import EmbeddingUnavailable, SentenceEmbedder, VectorIndex
    except ImportError as error:
        print(f"hybrid: unavailable ({error.name} is not installed)")
        return None
    torch.set_num_threads(1)
    try:
        index = VectorIndex.open(store, SentenceEmbedder.load())
    except EmbeddingUnavailable as error:
        print(f"hybrid: unavailable ({error})")
        return None
    started = time.perf_counter()
    embedded = index.backfill()
    print(f"embed_messages_per_s: {embedded / (time.perf_counter() - started):.0f}")
    return index


def labelled(hybrid: bool) -> None:
    questions = load_questions()
    with tempfile.TemporaryDirectory() as tmp, MemoryStore.open(Path(tmp) / "recall.db") as store:
        report = import_jsonl(store, read_lines(DATA / "recall_messages.jsonl"))
        print(f"messages: {report.added}")
        print(f"questions: {len(questions)}")
        ours, times = timed_ranking(
            lambda q: store.search(q["question"], user=q["user"], limit=10), questions
        )
        print(f"lexical_ms_per_question: {sum(times) / len(questions):.2f}")
        print_recall("lexical", recall(ours, questions))
        print_recall("baseline", recall(baseline_ranking(store, questions), questions))
        if hybrid and (index := open_hybrid(store)) is not None:
            fused, times = timed_ranking(
                lambda q: index.search(q["question"], user=q["user"], limit=10), questions
            )
            print(f"hybrid_ms_per_question: {sum(times) / len(questions):.2f}")
            print_recall("hybrid", recall(fused, questions))


def conversations(path: Path, hybrid: bool, split: set[str]) -> None:
    messages, questions = load_locomo(path)
    for question in questions:
        question["group"] = "split" if question["user"] in split else "rest"
    with tempfile.TemporaryDirectory() as tmp, MemoryStore.open(Path(tmp) / "recall.db") as store:
        store.add_messages(messages)
        print(f"conversations: {len({m.user for m in messages})}")
        print(f"messages: {len(messages)}")
        print(f"questions: {len(questions)}")
        modes = {
            "baseline": lambda q: baseline_ranking(store, [q])[0],
            "lexical": lambda q: store.search(q["question"], user=q["user"], limit=10),
        }
        if hybrid and (index := open_hybrid(store)) is not None:
            modes["hybrid"] = lambda q: index.search(q["question"], user=q["user"], limit=10)
        for mode, search in modes.items():
            ranked, times = timed_ranking(search, questions)
            print_conversation_recall(mode, ranked, questions, split)
            print(f"{mode}_p50_ms: {percentile(times, 0.5):.2f}")
            print(f"{mode}_p99_ms: {percentile(times, 0.99):.2f}")


def print_conversation_recall(
    mode: str, ranked: list[list[str]], questions: list[dict], split: set[str]
) -> None:
    table = recall(ranked, questions)  # by category ("kind") and "all"
    for k in KS:
        print(f"{mode}_recall_at_{k}: {table['all'][k]:.3f}")
    for kind in sorted(set(table) - {"all"}):
        print(f"{mode}_category_{kind}_recall_at_10: {table[kind][10]:.3f}")
    if split:
        for group in ("split", "rest"):
            chosen = [i for i, q in enumerate(questions) if q["group"] == group]
            if chosen:
                part = recall([ranked[i] for i in chosen], [questions[i] for i in chosen])["all"]
                for k in KS:
                    print(f"{mode}_{group}_recall_at_{k}: {part[k]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="a LoCoMo-format JSON file (default: the labelled set)")
    parser.add_argument(
        "--hybrid",
        action="store_true",
        help="labelled set: also measure BM25 + embeddings (extra `embeddings`)",
    )
    parser.add_argument("--lexical-only", action="store_true", help="--data: skip the hybrid mode")
    parser.add_argument(
        "--split",
        default="",
        help="--data: comma-separated sample ids a method was chosen on; figures for them and the rest",
    )
    args = parser.parse_args()
    if args.data is None:
        labelled(args.hybrid)
    else:
        conversations(args.data, not args.lexical_only, {s for s in args.split.split(",") if s})


if __name__ == "__main__":
    main()
