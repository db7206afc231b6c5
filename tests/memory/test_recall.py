"""Retrieval quality on the labelled recall set (bench/data): a floor under recall@k.

The figures bench/recall.py prints are the reference; these floors sit a little below
them so a change that makes search find fewer answers fails here.
"""

import importlib.util
from pathlib import Path

import pytest

from memory import MemoryStore, import_jsonl
from memory.jsonl import read_lines

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load_bench_module():
    spec = importlib.util.spec_from_file_location("recall_bench", BENCH / "recall.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    bench = load_bench_module()
    with MemoryStore.open(tmp_path_factory.mktemp("recall") / "recall.db") as store:
        import_jsonl(store, read_lines(bench.DATA / "recall_messages.jsonl"))
        yield bench, store, bench.load_questions()


def test_lexical_recall_floors(labelled) -> None:
    bench, store, questions = labelled
    ranked = [
        [h.external_id for h in store.search(q["question"], user=q["user"], limit=10)] for q in questions
    ]
    table = bench.recall(ranked, questions)
    assert table["lexical"][10] == 1.0
    assert table["partial"][10] >= 0.95
    assert table["all"][1] >= 0.58
    assert table["all"][10] >= 0.75
    assert table["substring"][10] >= 0.6


def test_lexical_search_beats_plain_fts5_or(labelled) -> None:
    bench, store, questions = labelled
    ours = bench.recall(
        [[h.external_id for h in store.search(q["question"], user=q["user"], limit=10)] for q in questions],
        questions,
    )
    baseline = bench.recall(bench.baseline_ranking(store, questions), questions)
    assert ours["all"][1] > baseline["all"][1]
    assert ours["all"][10] >= baseline["all"][10]
