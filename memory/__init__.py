"""temper's memory: one SQLite database of users, sessions, messages, facts and episodes,
with full-text search that finds the message that answers a question."""

from .access import Grant, PairingCode, PairingError
from .conversation import Summary, ToolCallRecord, Turn
from .embedding import EmbeddingUnavailable, SentenceEmbedder
from .episodes import REWARD_RANK, Episode
from .errors import ImportFormatError, MemoryStoreError, MigrationError, UnknownRecordError
from .facts import KINDS as FACT_KINDS
from .facts import FactChange, profile_line
from .forget import ForgetReport
from .hybrid import VectorIndex
from .inbox import InboxDepth, InboxItem, Reply
from .jsonl import ImportReport, export_jsonl, import_jsonl
from .linking import LinkCode, LinkError, MoveReport
from .records import AddReport, Fact, MemoryStats, Message, NewMessage, SearchHit, SessionInfo
from .redaction import is_secret_name
from .routing import BASE_VERSION, Competence, RouteDay, RoutingDecision
from .secrets import Redaction, Redactor, mask, redact
from .skill_index import SUCCESS_REWARD, IndexedSkill, SkillHealth, SkillMatch, SkillStats
from .store import MemoryStore
from .token_arrays import common_prefix, common_prefix_of
from .trajectory_export import ExportReport, RowMaker, export_trajectories, write_trajectories
from .trajectory_records import (
    ExecutorEpisode,
    RecordedCall,
    StoredCall,
    Trajectory,
    TrajectoryFilter,
    TrajectorySummary,
)
from .users import Identity, UserSummary

__all__ = [
    "BASE_VERSION",
    "FACT_KINDS",
    "REWARD_RANK",
    "SUCCESS_REWARD",
    "AddReport",
    "Competence",
    "EmbeddingUnavailable",
    "Episode",
    "ExecutorEpisode",
    "ExportReport",
    "Fact",
    "FactChange",
    "ForgetReport",
    "Grant",
    "Identity",
    "ImportFormatError",
    "ImportReport",
    "InboxDepth",
    "InboxItem",
    "IndexedSkill",
    "LinkCode",
    "LinkError",
    "MemoryStats",
    "MemoryStore",
    "MemoryStoreError",
    "Message",
    "MigrationError",
    "MoveReport",
    "NewMessage",
    "PairingCode",
    "PairingError",
    "RecordedCall",
    "Redaction",
    "Redactor",
    "Reply",
    "RouteDay",
    "RoutingDecision",
    "RowMaker",
    "SearchHit",
    "SentenceEmbedder",
    "SessionInfo",
    "SkillHealth",
    "SkillMatch",
    "SkillStats",
    "StoredCall",
    "Summary",
    "ToolCallRecord",
    "Trajectory",
    "TrajectoryFilter",
    "TrajectorySummary",
    "Turn",
    "UnknownRecordError",
    "UserSummary",
    "VectorIndex",
    "common_prefix",
    "common_prefix_of",
    "export_jsonl",
    "export_trajectories",
    "import_jsonl",
    "is_secret_name",
    "mask",
    "profile_line",
    "redact",
    "write_trajectories",
]
