"""The memory package's exceptions.

    MemoryStoreError            anything memory/ raises on purpose
    ├── MigrationError          a migration failed; the database stays at the last good version
    ├── UnknownRecordError      a user, session, message or fact id that is not in the database
    ├── ImportFormatError       one JSON Lines record is unusable (carries the line number)
    └── EmbeddingUnavailable    hybrid search without the `embeddings` extra (embedding.py)

A search never raises for what a person typed: any text is a valid query.
"""


class MemoryStoreError(Exception):
    """Base of every error memory/ raises on purpose."""


class MigrationError(MemoryStoreError):
    """A migration failed; its transaction was rolled back."""


class UnknownRecordError(MemoryStoreError):
    """An id that does not name a row."""


class ImportFormatError(MemoryStoreError):
    """A JSON Lines record that cannot be imported."""

    def __init__(self, line_number: int, reason: str) -> None:
        super().__init__(f"line {line_number}: {reason}")
        self.line_number = line_number
        self.reason = reason
