"""The plain records memory/ hands out and takes in."""

from dataclasses import dataclass
from typing import Literal

Role = Literal["user", "assistant", "system", "tool"]
ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")


@dataclass(frozen=True)
class NewMessage:
    """A message to store, named by session key and user handle (created on first use)."""

    session: str
    user: str
    role: str
    content: str
    ts: float
    external_id: str | None = None


@dataclass(frozen=True)
class Message:
    id: int
    external_id: str | None
    session: str
    user: str
    role: str
    content: str
    ts: float


@dataclass(frozen=True)
class SearchHit(Message):
    """A message found by a search: higher `score` is better; `snippet` marks matches [like this]."""

    score: float
    snippet: str


@dataclass(frozen=True)
class Fact:
    """Something temper learned about a user (memory/facts.py): `sources` are the ids of the
    messages it came from; a superseded fact is history, kept with a pointer to its successor."""

    id: int
    user_id: int
    statement: str
    kind: str
    confidence: float
    mentions: int  # how often it was stated: restating merges into the same fact
    created_at: float
    updated_at: float
    superseded_by: int | None = None
    supersedes: int | None = None
    sources: tuple[int, ...] = ()

    @property
    def source_message_id(self) -> int | None:
        return self.sources[0] if self.sources else None

    @property
    def current(self) -> bool:
        return self.superseded_by is None


@dataclass(frozen=True)
class AddReport:
    added: int
    duplicates: int


@dataclass(frozen=True)
class MemoryStats:
    users: int
    sessions: int
    messages: int
    facts: int
    episodes: int
    text_bytes: int
    database_bytes: int
    wal_bytes: int
    trigram_rows: int
    schema_version: int


@dataclass(frozen=True)
class SessionInfo:
    """A session as a list shows it: its chat, when it was last used, how much it holds."""

    key: str
    chat_id: str
    updated_at: float
    messages: int
    first_user_message: str | None
