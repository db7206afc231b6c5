"""Import and export of messages as JSON Lines, one message per line:

    {"id": "...", "session": "...", "user": "...", "role": "user|assistant|system|tool",
     "content": "...", "ts": "ISO 8601 or epoch seconds"}

`id` is optional and kept as the message's external id. A line without one gets a stable
id derived from its fields ("~" + hash), so importing the same file twice adds nothing
either way. Bad lines are reported with their line numbers and skipped; the good lines all
land. Export writes the same format (synthetic ids left out), so files round-trip.
"""

import hashlib
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from .errors import ImportFormatError
from .records import ROLES, NewMessage
from .store import MemoryStore

BATCH = 5_000
SYNTHETIC_ID_PREFIX = "~"


@dataclass
class ImportReport:
    lines: int = 0
    added: int = 0
    duplicates: int = 0
    errors: list[ImportFormatError] = field(default_factory=list)


def import_jsonl(store: MemoryStore, lines: Iterable[str]) -> ImportReport:
    """Import every good line of `lines`; one transaction per batch of BATCH lines."""
    report = ImportReport()
    batch: list[NewMessage] = []
    for line_number, line in enumerate(lines, start=1):
        report.lines = line_number
        if not line.strip():
            continue
        try:
            batch.append(parse_line(line, line_number))
        except ImportFormatError as error:
            report.errors.append(error)
        if len(batch) >= BATCH:
            _flush(store, batch, report)
    _flush(store, batch, report)
    return report


def _flush(store: MemoryStore, batch: list[NewMessage], report: ImportReport) -> None:
    if batch:
        added = store.add_messages(batch)
        report.added += added.added
        report.duplicates += added.duplicates
        batch.clear()


def parse_line(line: str, line_number: int) -> NewMessage:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise ImportFormatError(
            line_number, f"not valid JSON ({error.msg} at column {error.colno})"
        ) from None
    if not isinstance(record, dict):
        raise ImportFormatError(line_number, f"expected a JSON object, got {type(record).__name__}")
    session = _required_text(record, "session", line_number)
    user = _required_text(record, "user", line_number)
    role = record.get("role")
    if role not in ROLES:
        raise ImportFormatError(line_number, f"'role' must be one of {', '.join(ROLES)}, got {role!r}")
    content = record.get("content")
    if not isinstance(content, str):
        raise ImportFormatError(line_number, "'content' must be a string")
    if "\x00" in content:
        raise ImportFormatError(line_number, "'content' contains a NUL character")
    ts = parse_timestamp(record.get("ts"), line_number)
    external_id = record.get("id")
    if external_id is None:
        external_id = synthetic_id(session, user, role, content, ts)
    elif isinstance(external_id, (str, int)) and not isinstance(external_id, bool) and str(external_id):
        external_id = str(external_id)
    else:
        raise ImportFormatError(line_number, "'id' must be a non-empty string when given")
    return NewMessage(session=session, user=user, role=role, content=content, ts=ts, external_id=external_id)


def _required_text(record: dict, key: str, line_number: int) -> str:
    value = record.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise ImportFormatError(line_number, f"'{key}' must be a non-empty string")
    return value


def parse_timestamp(value: object, line_number: int) -> float:
    """Epoch seconds from an ISO 8601 string (naive means UTC) or a number of seconds."""
    if isinstance(value, bool) or value is None:
        raise ImportFormatError(line_number, "'ts' is required: ISO 8601 text or epoch seconds")
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text)
        except ValueError:
            try:
                moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
            except ValueError:
                raise ImportFormatError(
                    line_number, f"'ts' is not ISO 8601 or epoch seconds: {value!r}"
                ) from None
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            return round(moment.timestamp(), 6)
        value = number
    if isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value < 32_503_680_000:
        return round(float(value), 6)
    raise ImportFormatError(line_number, f"'ts' out of range: {value!r}")


def synthetic_id(session: str, user: str, role: str, content: str, ts: float) -> str:
    digest = hashlib.sha256(
        json.dumps([session, user, role, content, f"{ts:.6f}"], ensure_ascii=False).encode()
    ).hexdigest()
    return SYNTHETIC_ID_PREFIX + digest[:24]


def export_jsonl(store: MemoryStore, out: IO[str]) -> int:
    """Write every message to `out` in the import format; return how many."""
    written = 0
    for line in _export_lines(store):
        out.write(line)
        written += 1
    return written


def _export_lines(store: MemoryStore) -> Iterator[str]:
    for message in store.iter_messages():
        record: dict[str, object] = {}
        if message.external_id and not message.external_id.startswith(SYNTHETIC_ID_PREFIX):
            record["id"] = message.external_id
        record.update(
            session=message.session,
            user=message.user,
            role=message.role,
            content=message.content,
            ts=datetime.fromtimestamp(message.ts, tz=UTC).isoformat(),
        )
        yield json.dumps(record, ensure_ascii=False) + "\n"


def read_lines(path: Path) -> Iterator[str]:
    """Lines of a UTF-8 file; undecodable bytes become U+FFFD rather than aborting the import."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        yield from handle
