"""temper's memory: one SQLite database of users, sessions, messages, facts and episodes,
with full-text search that finds the message that answers a question."""

from .access import Grant, PairingCode, PairingError
from .conversation import Summary, ToolCallRecord, Turn
from .embedding import EmbeddingUnavailable, SentenceEmbedder
from .episodes import REWARD_RANK, Episode
from .errors import ImportFormatError, MemoryStoreError, MigrationError, UnknownRecordError
from .hybrid import VectorIndex
from .inbox import InboxDepth, InboxItem, Reply
from .jsonl import ImportReport, export_jsonl, import_jsonl
from .records import AddReport, Fact, MemoryStats, Message, NewMessage, SearchHit, SessionInfo
from .redaction import is_secret_name
from .routing import BASE_VERSION, Competence, RouteDay, RoutingDecision
from .secrets import Redaction, Redactor, mask, redact
from .store import MemoryStore
from .token_arrays import common_prefix, common_prefix_of
from .trajectory_export import ExportReport, export_trajectories
from .trajectory_records import (
    ExecutorEpisode,
    RecordedCall,
    StoredCall,
    Trajectory,
    TrajectoryFilter,
    TrajectorySummary,
)

__all__ = [
    "BASE_VERSION",
    "REWARD_RANK",
    "AddReport",
    "Competence",
    "EmbeddingUnavailable",
    "Episode",
    "ExecutorEpisode",
    "ExportReport",
    "Fact",
    "Grant",
    "ImportFormatError",
    "ImportReport",
    "InboxDepth",
    "InboxItem",
    "MemoryStats",
    "MemoryStore",
    "MemoryStoreError",
    "Message",
    "MigrationError",
    "NewMessage",
    "PairingCode",
    "PairingError",
    "RecordedCall",
    "Redaction",
    "Redactor",
    "Reply",
    "RouteDay",
    "RoutingDecision",
    "SearchHit",
    "SentenceEmbedder",
    "SessionInfo",
    "StoredCall",
    "Summary",
    "ToolCallRecord",
    "Trajectory",
    "TrajectoryFilter",
    "TrajectorySummary",
    "Turn",
    "UnknownRecordError",
    "VectorIndex",
    "common_prefix",
    "common_prefix_of",
    "export_jsonl",
    "export_trajectories",
    "import_jsonl",
    "is_secret_name",
    "mask",
    "redact",
]
