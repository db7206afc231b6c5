from pathlib import Path

import apsw
import pytest

from memory import MemoryStore, MigrationError
from memory.database import MMAP_BYTES, connect
from memory.migrations import MIGRATIONS, current_version, migrate


def tables(db: apsw.Connection) -> set[str]:
    return {row[0] for row in db.execute("select name from sqlite_schema where type in ('table', 'view')")}


def test_empty_database_migrates_to_latest(tmp_path: Path) -> None:
    db = connect(tmp_path / "m.db")
    applied = migrate(db)
    assert applied == [m.__name__ for m in MIGRATIONS]
    assert current_version(db) == len(MIGRATIONS)
    assert {
        "users",
        "identities",
        "sessions",
        "messages",
        "facts",
        "episodes",
        "messages_fts",
        "messages_trigram",
        "message_docs",
        "migrations",
    } <= tables(db)
    assert migrate(db) == []  # applied once each
    assert db.execute("pragma journal_mode").fetchone()[0] == "wal"
    assert db.execute("pragma foreign_keys").fetchone()[0] == 1
    assert db.execute("pragma auto_vacuum").fetchone()[0] == 2  # incremental
    assert db.execute("pragma mmap_size").fetchone()[0] == MMAP_BYTES  # reads through a memory map


def test_database_at_oldest_version_keeps_its_rows_and_indexes_them(tmp_path: Path) -> None:
    db = connect(tmp_path / "old.db")
    migrate(db, target=1)
    db.execute("insert into users(id, handle, created_at) values (1, 'ana', 0)")
    db.execute(
        "insert into sessions(id, key, platform, chat_id, created_at, updated_at) values (1, 'k', 'cli', 'k', 0, 0)"
    )
    db.execute(
        "insert into messages(session_id, user_id, role, content, ts) values (1, 1, 'user', 'the harbour ferry leaves at noon', 5)"
    )
    db.execute(
        "insert into messages(session_id, user_id, role, content, ts) values (1, 1, 'user', '渡し船は正午に出発します', 6)"
    )
    db.close()
    with MemoryStore.open(tmp_path / "old.db") as store:
        assert store.stats().schema_version == len(MIGRATIONS)
        assert [h.content for h in store.search("ferries", user="ana")] == [
            "the harbour ferry leaves at noon"
        ]
        assert [h.content for h in store.search("正午に出発", user="ana")] == ["渡し船は正午に出発します"]


def test_failed_migration_rolls_back_and_says_which(tmp_path: Path) -> None:
    db = connect(tmp_path / "bad.db")
    migrate(db, target=1)
    db.execute("create table message_docs(x)")  # collides with what migration 2 creates
    with pytest.raises(MigrationError, match="migration 2 .*m002_message_search"):
        migrate(db)
    assert current_version(db) == 1
    assert "messages_fts" not in tables(db)
