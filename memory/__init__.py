"""temper's memory: one SQLite database of users, sessions, messages, facts and episodes,
with full-text search that finds the message that answers a question."""

from .errors import ImportFormatError, MemoryStoreError, MigrationError, UnknownRecordError
from .embedding import EmbeddingUnavailable, SentenceEmbedder
from .hybrid import VectorIndex
from .jsonl import ImportReport, export_jsonl, import_jsonl
from .records import AddReport, Fact, MemoryStats, Message, NewMessage, SearchHit
from .store import MemoryStore

__all__ = [
    "AddReport",
    "EmbeddingUnavailable",
    "Fact",
    "ImportFormatError",
    "ImportReport",
    "MemoryStats",
    "MemoryStore",
    "MemoryStoreError",
    "Message",
    "MigrationError",
    "NewMessage",
    "SearchHit",
    "SentenceEmbedder",
    "UnknownRecordError",
    "VectorIndex",
    "export_jsonl",
    "import_jsonl",
]
