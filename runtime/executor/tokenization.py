"""The executor's tokenizer: chats to prompt ids, re-tokenising text, and what identifies it.

    tokenizer = ExecutorTokenizer.load(directory)        # a Hugging Face tokenizer directory
    prompt_ids = tokenizer.encode_chat(messages)         # the chat template, generation prompt on
    prompt_ids, completion_ids = tokenizer.retokenize(messages, text, finish_reason)
    tokenizer = TokenizerOnDemand(directory)             # loaded on first `await tokenizer.get()`

Invariants:
- `encode_chat` is how every backend that holds a tokenizer turns messages into prompt ids: the
  model's chat template with the generation prompt appended, no further special tokens.
- `retokenize` is for servers that returned text only. Its completion ids are the plain encoding
  of the text, plus the eos token when the model stopped by itself (`finish_reason == "stop"`),
  because a sampled completion ends with the eos the model chose, and a model trained on the
  record should learn to stop there too.
- `hash` identifies the vocabulary, merges, normalisation and special tokens (not the runtime
  padding or truncation settings); `chat_template_hash` the template text. Both are 16 hex digits.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runtime.executor.errors import ExecutorLoadError, ExecutorRequestError


class ExecutorTokenizer:
    """A Hugging Face tokenizer with the few operations the executor needs; see the module
    docstring. `hf` is the wrapped tokenizer (a `PreTrainedTokenizerBase`)."""

    def __init__(self, hf: Any) -> None:
        self.hf = hf
        self.hash = _tokenizer_hash(hf)
        template = getattr(hf, "chat_template", None)
        self.chat_template_hash = _short_hash(template.encode()) if isinstance(template, str) else None

    @classmethod
    def load(cls, directory: str | Path) -> ExecutorTokenizer:
        from transformers import AutoTokenizer

        path = Path(directory).expanduser()
        if not path.is_dir():
            raise ExecutorLoadError(f"tokenizer directory {path} does not exist: give a model directory")
        try:
            hf = AutoTokenizer.from_pretrained(path)
        except (OSError, ValueError) as exc:
            raise ExecutorLoadError(f"cannot load a tokenizer from {path}: {exc}") from None
        return cls(hf)

    @property
    def eos_id(self) -> int | None:
        return self.hf.eos_token_id

    @property
    def vocab_size(self) -> int:
        return len(self.hf)

    def encode_chat(self, messages: Sequence[dict[str, Any]]) -> list[int]:
        """The prompt ids of `messages` with the generation prompt; `ExecutorRequestError` when the
        template rejects them (an unknown role, an empty list)."""
        from jinja2 import TemplateError

        if not messages:
            raise ExecutorRequestError("no messages: send at least one")
        if self.chat_template_hash is None:
            raise ExecutorRequestError(
                "this tokenizer has no chat template: send token ids to /v1/completions"
            )
        for number, message in enumerate(messages):
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str) and not _is_text(content):
                raise ExecutorRequestError(
                    f"message {number} is not text: it holds half of a character (a lone surrogate)"
                )
        try:
            encoded = self.hf.apply_chat_template(
                list(messages), add_generation_prompt=True, tokenize=True, return_dict=True
            )
        except (TemplateError, ValueError) as exc:
            raise ExecutorRequestError(f"the chat template rejected the messages: {exc}") from None
        return list(encoded["input_ids"])

    def encode_text(self, text: str, *, special_tokens: bool = False) -> list[int]:
        """The ids of `text`; `special_tokens` adds what the tokenizer puts around a whole input
        (a bos token, for some), as servers do for a text prompt to /v1/completions."""
        return list(self.hf.encode(text, add_special_tokens=special_tokens))

    def decode(self, ids: Sequence[int]) -> str:
        """The text of `ids`, special tokens (the eos) left out."""
        return self.hf.decode(list(ids), skip_special_tokens=True, clean_up_tokenization_spaces=False)

    def token_text(self, token_id: int) -> str:
        """One token's text as servers show it in logprobs (special tokens included)."""
        return self.hf.decode([token_id], skip_special_tokens=False, clean_up_tokenization_spaces=False)

    @functools.cached_property
    def byte_level(self) -> bool:
        """Whether the decoder is byte-level BPE's (read once, from the tokenizer's JSON)."""
        return _decodes_byte_level(self.hf)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes one token stands for. Byte-level BPE tokenizers (GPT-2, Qwen, Llama 3, the
        tiny executor's) spell each byte as one character of a fixed table, so a token holding
        half of a multi-byte character gets exactly its bytes; others, their text as UTF-8."""
        if self.byte_level:
            piece = self.hf.convert_ids_to_tokens(token_id)
            if isinstance(piece, str) and all(character in _BYTE_OF for character in piece):
                return bytes(_BYTE_OF[character] for character in piece)
        return self.token_text(token_id).encode()

    def retokenize(
        self, messages: Sequence[dict[str, Any]], text: str, finish_reason: str
    ) -> tuple[list[int], list[int]]:
        """(prompt ids, completion ids) for a completion known only as text."""
        completion_ids = self.encode_text(text)
        if finish_reason == "stop" and self.eos_id is not None:
            completion_ids.append(self.eos_id)
        return self.encode_chat(messages), completion_ids


class TokenizerOnDemand:
    """A tokenizer directory (or none) loaded on first use, in a worker thread: backends that
    need the tokenizer only for some calls do not pay for it at construction."""

    def __init__(self, directory: str | Path | None) -> None:
        self.directory = Path(directory).expanduser() if directory is not None else None
        self._tokenizer: ExecutorTokenizer | None = None

    async def get(self) -> ExecutorTokenizer | None:
        if self._tokenizer is None and self.directory is not None:
            self._tokenizer = await asyncio.to_thread(ExecutorTokenizer.load, self.directory)
        return self._tokenizer


def _byte_table() -> dict[str, int]:
    """Byte-level BPE's characters for the 256 bytes (GPT-2's table): printable Latin-1 bytes
    stand for themselves, the others for the characters from U+0100 on, in byte order."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    moved = [byte for byte in range(256) if byte not in kept]
    return {chr(byte): byte for byte in kept} | {chr(256 + n): byte for n, byte in enumerate(moved)}


_BYTE_OF = _byte_table()


def _decodes_byte_level(hf: Any) -> bool:
    """Whether the fast tokenizer's decoder is (or contains) the byte-level one."""
    backend = getattr(hf, "backend_tokenizer", None)
    if backend is None:
        return False
    try:
        decoder = json.loads(backend.to_str()).get("decoder") or {}
    except (ValueError, AttributeError):
        return False
    parts = decoder.get("decoders", [decoder]) if decoder.get("type") == "Sequence" else [decoder]
    return any(part.get("type") == "ByteLevel" for part in parts if isinstance(part, dict))


def _tokenizer_hash(hf: Any) -> str:
    backend = getattr(hf, "backend_tokenizer", None)
    if backend is not None:
        state = json.loads(backend.to_str())
        state.pop("truncation", None)
        state.pop("padding", None)
    else:  # a tokenizer without a `tokenizers` backend: its vocabulary is what we can see
        state = {"vocab": sorted(hf.get_vocab().items())}
    state["special"] = sorted(map(str, hf.all_special_tokens))
    return _short_hash(json.dumps(state, sort_keys=True, ensure_ascii=False).encode())


def _short_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _is_text(text: str) -> bool:
    """Whether `text` encodes as UTF-8: not when it holds a lone surrogate (a JSON "\\ud83d"
    alone decodes to one), which the tokenizer cannot take."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
