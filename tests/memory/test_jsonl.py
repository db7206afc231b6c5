import io
import json
from datetime import UTC, datetime
from pathlib import Path

from memory import MemoryStore, export_jsonl, import_jsonl

GOOD = [
    {
        "id": "a1",
        "session": "s1",
        "user": "ana",
        "role": "user",
        "content": "first",
        "ts": "2026-10-01T10:00:00Z",
    },
    {"session": "s1", "user": "ana", "role": "assistant", "content": "no id here", "ts": 1790000000},
    {
        "id": "a3",
        "session": "s2",
        "user": "bo",
        "role": "tool",
        "content": "naïve café 東京 🎉",
        "ts": "2026-10-02T10:00:00.123456+02:00",
    },
    {"id": 42, "session": "s2", "user": "bo", "role": "system", "content": "", "ts": "1790000001.5"},
]


def lines(records) -> list[str]:
    return [json.dumps(r, ensure_ascii=False) if not isinstance(r, str) else r for r in records]


def test_bad_lines_are_reported_by_number_and_the_good_ones_all_land(store: MemoryStore) -> None:
    bad = [
        "{not json",
        "[1, 2]",
        json.dumps({"session": "s", "user": "ana", "role": "boss", "content": "x", "ts": 1}),
        json.dumps({"session": "s", "user": "ana", "role": "user", "content": 5, "ts": 1}),
        json.dumps({"session": "", "user": "ana", "role": "user", "content": "x", "ts": 1}),
        json.dumps({"session": "s", "user": "ana", "role": "user", "content": "x", "ts": "yesterday"}),
        json.dumps({"session": "s", "user": "ana", "role": "user", "content": "x"}),
        json.dumps({"session": "s", "user": "ana", "role": "user", "content": "x", "ts": 1e300}),
        json.dumps({"id": True, "session": "s", "user": "ana", "role": "user", "content": "x", "ts": 1}),
    ]
    mixed = lines(GOOD[:2]) + bad + [""] + lines(GOOD[2:])
    report = import_jsonl(store, mixed)
    assert report.added == 4
    assert [e.line_number for e in report.errors] == list(range(3, 12))
    assert "not valid JSON" in report.errors[0].reason
    assert "role" in report.errors[2].reason and "boss" in report.errors[2].reason
    assert "ts" in report.errors[5].reason
    assert store.stats().messages == 4


def test_importing_twice_adds_nothing(store: MemoryStore) -> None:
    assert import_jsonl(store, lines(GOOD)).added == 4
    again = import_jsonl(store, lines(GOOD))
    assert (again.added, again.duplicates) == (0, 4)
    assert store.stats().messages == 4


def test_export_round_trips(tmp_path: Path, store: MemoryStore) -> None:
    import_jsonl(store, lines(GOOD))
    first = io.StringIO()
    assert export_jsonl(store, first) == 4
    exported = [json.loads(line) for line in first.getvalue().splitlines()]
    assert [r.get("id") for r in exported] == ["a1", None, "a3", "42"]  # synthetic ids stay out
    assert exported[2]["content"] == "naïve café 東京 🎉"
    with MemoryStore.open(tmp_path / "copy.db") as copy:
        assert import_jsonl(copy, first.getvalue().splitlines()).added == 4
        second = io.StringIO()
        export_jsonl(copy, second)
        assert second.getvalue() == first.getvalue()
        # The export of an id-less line re-imports as the same message: nothing new.
        assert import_jsonl(copy, first.getvalue().splitlines()).added == 0


def test_timestamps_are_normalised_to_utc_epoch(store: MemoryStore) -> None:
    import_jsonl(store, lines(GOOD))
    by_id = {m.external_id: m for m in store.iter_messages()}
    assert by_id["a1"].ts == datetime(2026, 10, 1, 10, tzinfo=UTC).timestamp()
    assert by_id["a3"].ts == round(datetime(2026, 10, 2, 8, 0, 0, 123456, tzinfo=UTC).timestamp(), 6)
    assert by_id["42"].ts == 1790000001.5
