"""Hybrid search: BM25 and sentence embeddings fused by reciprocal rank (extra `embeddings`)."""

import pytest

from memory import EmbeddingUnavailable, MemoryStore, NewMessage, SentenceEmbedder, VectorIndex

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def embedder() -> SentenceEmbedder:
    torch = pytest.importorskip("torch", reason="the embeddings extra is not installed")
    torch.set_num_threads(1)
    try:
        return SentenceEmbedder.load()
    except EmbeddingUnavailable as error:
        pytest.skip(str(error))


def test_hybrid_finds_what_shares_no_word_with_the_question(
    store: MemoryStore, embedder: SentenceEmbedder
) -> None:
    store.add_messages(
        [
            NewMessage("s", "ana", "user", "My sister just moved to Lisbon for her new job", 1.0, "fact"),
            NewMessage("s", "ana", "user", "Where should we eat tonight, pizza or sushi?", 2.0, "food"),
            NewMessage("s", "ana", "user", "The printer on floor two is jammed again", 3.0, "printer"),
            NewMessage("t", "bo", "user", "My brother relocated to Madrid last spring", 4.0, "bo-fact"),
        ]
    )
    question = "which city does my sibling live in now?"
    assert store.search(question, user="ana") == []  # no shared word: lexical search is blind
    index = VectorIndex.open(store, embedder)
    assert index.backfill() == 4
    assert index.backfill() == 0  # only new messages are embedded
    hits = index.search(question, user="ana", limit=3)
    assert hits[0].external_id == "fact"
    assert "bo-fact" not in [h.external_id for h in hits]  # vectors are scoped per user too
    # A message found by both lists outranks one found by one list only.
    both = index.search("sister moved to Lisbon", user="ana", limit=3)
    assert both[0].external_id == "fact" and both[0].score > both[1].score


def test_deleted_messages_drop_out_and_are_pruned(store: MemoryStore, embedder: SentenceEmbedder) -> None:
    store.add_messages(
        [NewMessage("s", "ana", "user", "the cabin wifi password is on the fridge", 1.0, "wifi")]
    )
    index = VectorIndex.open(store, embedder)
    index.backfill()
    store.delete_message(store.search("wifi", user="ana")[0].id)
    assert index.search("internet code at the cottage", user="ana") == []
    assert index.prune() == 1
