"""A writer killed mid-transaction: the database stays intact, committed rows stay."""

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from memory import MemoryStore

WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from memory import MemoryStore, NewMessage

    store = MemoryStore.open(sys.argv[1])
    store.add_messages(NewMessage("s", "ana", "user", f"committed {i}", float(i), f"c{i}") for i in range(500))

    def doomed():
        for i in range(5000):
            if i == 2500:  # half way through the second transaction's batch
                os.kill(os.getpid(), signal.SIGKILL)
            yield NewMessage("s", "ana", "user", f"uncommitted {i}", float(i), f"u{i}")

    store.add_messages(doomed())
    """
)


def test_writer_killed_mid_transaction(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    result = subprocess.run([sys.executable, "-c", WRITER, str(path)], capture_output=True, timeout=120)
    assert result.returncode == -signal.SIGKILL, result.stderr.decode()
    with MemoryStore.open(path) as store:
        assert store.db.execute("pragma integrity_check").fetchone()[0] == "ok"
        store.db.execute("insert into messages_fts(messages_fts, rank) values ('integrity-check', 1)")
        assert store.stats().messages == 500
        assert len(store.search("committed", user="ana", limit=200)) == 200
        assert store.search("uncommitted", user="ana") == []
        # And the store takes writes again.
        assert (
            store.add_message(
                session_id=store.session_id("s"), user_id=store.user_id("ana"), role="user", content="after"
            )
            > 0
        )
