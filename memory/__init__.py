"""temper's memory: one SQLite database of users, sessions, messages, facts and episodes,
with full-text search that finds the message that answers a question."""

from .episodes import Episode
from .errors import ImportFormatError, MemoryStoreError, MigrationError, UnknownRecordError
from .conversation import Summary, ToolCallRecord, Turn
from .embedding import EmbeddingUnavailable, SentenceEmbedder
from .hybrid import VectorIndex
from .jsonl import ImportReport, export_jsonl, import_jsonl
from .records import AddReport, Fact, MemoryStats, Message, NewMessage, SearchHit, SessionInfo
from .store import MemoryStore

__all__ = [
    "AddReport",
    "EmbeddingUnavailable",
    "Episode",
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
    "SessionInfo",
    "Summary",
    "ToolCallRecord",
    "Turn",
    "UnknownRecordError",
    "VectorIndex",
    "export_jsonl",
    "import_jsonl",
]
