"""The hybrid fusion's ranking rule, on constructed rankings (no model needed)."""

from memory.hybrid import CONFIDENT, fuse


def test_embedding_distractors_cannot_push_the_lexical_head_down() -> None:
    # The answer is lexical's first hit; the neighbours are distractors and lexical's tail.
    lexical = ["answer"] + [f"l{n}" for n in range(2, CONFIDENT + 3)]
    neighbours = ["x1", "x2", "x3", *reversed(lexical[1:])]
    ids = [message for message, _ in fuse(lexical, neighbours)]
    assert ids[:CONFIDENT] == lexical[:CONFIDENT]
    # Plain RRF (k=60) would rank a hit found by both lists above the answer found by one.
    plain = {m: 0.0 for m in ids}
    for ranking in (lexical, neighbours):
        for rank, m in enumerate(ranking):
            plain[m] += 1 / (60 + rank + 1)
    assert max(plain, key=plain.__getitem__) != "answer"


def test_below_the_head_both_lists_count_and_scores_fall() -> None:
    head = [f"h{n}" for n in range(CONFIDENT)]
    fused = fuse([*head, "c", "d"], ["z", "d", "c"])
    ids = [message for message, _ in fused]
    assert ids[:CONFIDENT] == head
    assert ids.index("c") < ids.index("z") and ids.index("d") < ids.index("z")  # found by both
    scores = [score for _, score in fused]
    assert scores == sorted(scores, reverse=True)
    assert set(ids) == {*head, "c", "d", "z"}
