"""Forgetting a person (memory/forget.py) and exporting them (memory/user_export.py): everything
goes, down to the bytes of the database and WAL files; nobody else's data moves."""

from __future__ import annotations

import io
import json
from pathlib import Path

from memory import MemoryStore

# Words that appear nowhere else: found in a file's bytes only if forgetting failed.
ANA_WORDS = ("zanzibarquokka", "Xylophrenic", "pterodactylmarmalade")
BO_WORD = "kumquatzeppelin"
PLATFORM_PAYLOAD = '{{"platform":"telegram","chat_id":"{u}","user_id":"{u}","text":"{t}"}}'


def fill(store: MemoryStore, platform_user: str, words: tuple[str, ...], filler: int) -> int:
    """A person with messages, a fact, a chat and an executor episode with a model call, a
    workspace snapshot, an inbox item with its reply, a pairing grant; returns their user id."""
    user_id = store.links.ensure_identity("telegram", platform_user, "Ana")
    key = f"telegram:{platform_user}:"
    session = store.ensure_session(key, platform="telegram", chat_id=platform_user, user_id=user_id,
                                   platform_user_id=platform_user)  # fmt: skip
    said = store.add_message(session_id=session, user_id=user_id, role="user",
                             content=f"my secret plan involves {' '.join(words)} tomorrow")  # fmt: skip
    store.add_message(
        session_id=session, user_id=user_id, role="user", content="日本語 " + words[0]
    )  # trigram index
    for n in range(filler):
        store.add_message(
            session_id=session, user_id=user_id, role="assistant", content=f"filler answer {n} {words[1]}"
        )
    store.facts.add(user_id, f"Plans something with {words[2]}", kind="plan", sources=[said])
    episode = store.episodes.start(session, user_id, f"do {words[0]}", said)
    executor = store.trajectories.start_executor_episode(f"run {words[1]}", session_id=session, user_id=user_id,
                                                         parent_episode_id=episode, snapshot_id="ab" * 32)  # fmt: skip
    store.db.execute(
        "insert into model_calls(episode_id, call_index, role, model, sampling, prompt_shared, prompt_suffix,"
        " completion_ids, completion_logprobs, extends_previous, common_prefix, messages_shared, messages, text,"
        " finish_reason, retokenized, latency_s, created_at) values (?, 0, 'executor', 'm', '{}', 0, x'', x'',"
        " x'', 0, 0, 0, ?, ?, 'stop', 0, 0.1, 0)",
        (executor, json.dumps([{"role": "user", "content": words[2]}]), f"ls {words[0]}"),
    )
    store.set_workspace_snapshot(session, "cd" * 32 if platform_user == "111" else "ef" * 32)
    item = store.inbox.add("telegram", f"m:{platform_user}:1", "message", key,
                           PLATFORM_PAYLOAD.format(u=platform_user, t=words[0]))  # fmt: skip
    assert item is not None
    store.inbox.add_reply(item, platform="telegram", chat_id=platform_user, thread_id="", reply_to=None,
                          text=f"noted {words[1]}", episode_id=episode)  # fmt: skip
    store.access.grant("telegram", platform_user, "Ana")
    return user_id


def file_bytes(path: Path) -> bytes:
    wal = Path(str(path) + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def test_forget_leaves_no_trace_in_the_files_and_spares_everyone_else(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with MemoryStore.open(path) as store:
        ana = fill(store, "111", ANA_WORDS, filler=300)
        bo = fill(store, "222", (BO_WORD, "bolero", "borealis"), filler=50)
        store.maintain()  # the words are in the database file itself, not only in the WAL
        before = file_bytes(path)
        assert all(word.encode() in before for word in ANA_WORDS)

        report = store.users.forget(ana)

        assert report.checkpointed and report.wal_bytes == 0
        assert report.snapshot_ids == ("cd" * 32,)  # "ab..." is bo's too (content-addressed), "ef..." bo's
        assert report.deleted["messages"] == 302 and report.deleted["facts"] == 1
        assert report.deleted["episodes"] == 2 and report.deleted["model_calls"] == 1
        assert report.deleted["inbox"] >= 1 and report.deleted["access_grants"] == 1
        data = file_bytes(path)
        for word in ANA_WORDS:
            assert word.encode() not in data and word.lower().encode() not in data, word
        assert store.user_for_identity("telegram", "111") is None
        assert not store.access.has_grant("telegram", "111")

        # bo is untouched and still found
        found = {hit.content for hit in store.search(BO_WORD, user="telegram:222")}
        assert f"日本語 {BO_WORD}" in found and any(text.startswith("my secret plan") for text in found)
        assert [f.statement for f in store.facts.search(bo, "borealis")] == ["Plans something with borealis"]
        assert store.users.get(bo).messages == 52 and store.access.has_grant("telegram", "222")
        assert BO_WORD.encode() in file_bytes(path)
        assert store.db.execute("pragma integrity_check").fetchone() == ("ok",)
        assert (
            store.db.execute(
                "insert into messages_fts(messages_fts, rank) values ('integrity-check', 1)"
            ).fetchall()
            == []
        )


def test_export_holds_everything_forget_removes(store: MemoryStore) -> None:
    ana = fill(store, "111", ANA_WORDS, filler=2)
    fill(store, "222", (BO_WORD, "bolero", "borealis"), filler=2)
    out = io.StringIO()
    counts = store.users.export(ana, out)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert counts == {
        "user": 1, "identity": 1, "session": 1, "message": 4, "fact": 1, "episode": 2, "model_call": 1,
        "inbox": 1, "reply": 1, "access_grant": 1,
    }  # fmt: skip
    text = out.getvalue()
    assert all(word in text for word in ANA_WORDS)
    assert BO_WORD not in text and "bolero" not in text and '"222"' not in text
    [fact] = [r for r in records if r["type"] == "fact"]
    [first] = [r for r in records if r["type"] == "message" and "secret plan" in r["content"]]
    assert fact["sources"] == [first["id"]] and fact["kind"] == "plan"
