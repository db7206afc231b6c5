"""Executor episodes and token-level model calls: prefix sharing, bytes per token, mismatch
causes, secrets, filters, JSON Lines and Parquet exports, and the migration from version 5."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from memory import MemoryStore, StoredCall, UnknownRecordError, export_trajectories
from memory.database import connect
from memory.migrations import MIGRATIONS, migrate
from memory.trajectory_records import TrajectoryFilter

OPENAI_KEY = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"


def episode_calls(
    turns: int = 10, seed: int = 0, system: int = 300, completion: int = 60, observation: int = 40
) -> list[StoredCall]:
    """Calls of one episode in which each prompt extends the previous prompt + completion."""
    rng = random.Random(seed)
    prompt = [rng.randrange(50_000) for _ in range(system)]
    messages: list[dict] = [
        {"role": "system", "content": "You run commands."},
        {"role": "user", "content": "list files"},
    ]
    calls = []
    for turn in range(turns):
        sampled = [rng.randrange(50_000) for _ in range(completion)]
        text = f'{{"analysis": "turn {turn}", "commands": [{{"keystrokes": "ls\\n"}}]}}'
        calls.append(
            StoredCall(
                role="executor", model="tiny-executor", prompt_ids=list(prompt), completion_ids=sampled,
                completion_logprobs=[-rng.random() for _ in sampled], finish_reason="stop", text=text,
                messages=list(messages), adapter_version="v3", tokenizer_hash="tok1",
                chat_template_hash="tpl1", latency_s=0.05, sampling={"temperature": 0.7, "seed": turn},
            )
        )  # fmt: skip
        prompt = prompt + sampled + [rng.randrange(50_000) for _ in range(observation)]
        messages = messages + [
            {"role": "assistant", "content": text},
            {"role": "user", "content": f"output {turn}"},
        ]
    return calls


def record_episode(store: MemoryStore, calls: list[StoredCall], **episode) -> int:
    episode_id = store.trajectories.start_executor_episode(episode.pop("task", "list the files"), **episode)
    for call in calls:
        store.trajectories.record_call(episode_id, call)
    return episode_id


def token_bytes(store: MemoryStore, episode_id: int) -> int:
    return store.db.execute(
        "select sum(length(prompt_suffix) + length(completion_ids) + length(completion_logprobs))"
        " from model_calls where episode_id = ?",
        (episode_id,),
    ).fetchone()[0]


def test_calls_round_trip_with_prefix_sharing(store: MemoryStore) -> None:
    calls = episode_calls()
    episode_id = record_episode(store, calls, split="train", group_id="g1", sandbox_backend="bwrap",
                                snapshot_id="sha256:abc", snapshot_bytes=10_240, verifier="test -f out.txt")  # fmt: skip
    stored = store.trajectories.calls(episode_id)
    assert [c.index for c in stored] == list(range(10))
    for original, back in zip(calls, stored):
        assert back.prompt_ids == original.prompt_ids
        assert back.completion_ids == original.completion_ids
        assert back.completion_logprobs == pytest.approx(original.completion_logprobs, abs=1e-6)
        assert back.messages == original.messages and back.text == original.text
        assert (back.model, back.adapter_version, back.sampling) == (original.model, "v3", original.sampling)
    assert [c.extends_previous for c in stored] == [False] + [True] * 9
    assert stored[0].mismatch is None and store.trajectories.prefix_mismatches() == {}
    # Only the appended tokens were stored: each row's suffix is the observation after call 0.
    suffixes = [
        row[0] for row in store.db.execute("select length(prompt_suffix) / 4 from model_calls order by id")
    ]
    assert suffixes == [300] + [40] * 9
    episode = store.trajectories.executor_episode(episode_id)
    assert (episode.kind, episode.split, episode.group_id, episode.snapshot_id, episode.snapshot_bytes) == (
        "executor",
        "train",
        "g1",
        "sha256:abc",
        10_240,
    )
    assert (episode.verifier, episode.sandbox_backend, episode.status, episode.contains_secret) == (
        "test -f out.txt",
        "bwrap",
        "running",
        False,
    )


def test_ten_call_episode_costs_at_most_8_bytes_per_final_token(store: MemoryStore) -> None:
    calls = episode_calls()
    episode_id = record_episode(store, calls)
    final_sequence = len(calls[-1].prompt_ids) + len(calls[-1].completion_ids)
    assert token_bytes(store, episode_id) / final_sequence <= 8.0
    # and exactly: 4 per token of the final sequence + 4 per sampled logprob
    sampled = sum(len(c.completion_ids) for c in calls)
    assert token_bytes(store, episode_id) == 4 * final_sequence + 4 * sampled


def test_a_call_that_does_not_extend_is_counted_and_shares_only_the_common_prefix(store: MemoryStore) -> None:
    calls = episode_calls(turns=4)
    rewritten = list(calls[2].prompt_ids)
    rewritten[10] += 1  # history re-rendered differently inside the old prompt
    observation = calls[3].prompt_ids[len(calls[2].prompt_ids) + len(calls[2].completion_ids) :]
    re_encoded = rewritten + calls[2].completion_ids + observation
    re_encoded[len(rewritten) + 1] += 1  # the sampled completion came back re-encoded

    changed = [
        calls[0],
        calls[1],
        replace(calls[2], prompt_ids=rewritten),
        replace(calls[3], prompt_ids=re_encoded),
    ]
    episode_id = record_episode(store, changed)
    stored = store.trajectories.calls(episode_id)
    assert [c.prompt_ids for c in stored] == [c.prompt_ids for c in changed]
    assert [c.extends_previous for c in stored] == [False, True, False, False]
    assert [c.mismatch for c in stored] == [None, None, "prompt_diverged", "completion_diverged"]
    assert (stored[2].common_prefix, stored[3].common_prefix) == (10, len(rewritten) + 1)
    # Only what follows the prefix both still share is stored again.
    suffixes = [
        row[0]
        for row in store.db.execute(
            "select length(prompt_suffix) / 4 from model_calls where call_index >= 2 order by call_index"
        )
    ]
    assert suffixes == [len(rewritten) - 10, len(re_encoded) - len(rewritten) - 1]
    assert store.trajectories.prefix_mismatches() == {"prompt_diverged": 1, "completion_diverged": 1}


def test_mismatch_causes_for_tokenizer_retokenized_and_shorter(store: MemoryStore) -> None:
    a, b = episode_calls(turns=2)
    episode_id = record_episode(store, [a, replace(b, tokenizer_hash="tok2")])
    assert store.trajectories.calls(episode_id)[1].mismatch == "tokenizer_changed"
    whole = store.db.execute("select length(prompt_suffix) / 4 from model_calls where id = 2").fetchone()[0]
    assert whole == len(b.prompt_ids)  # other ids mean other text: stored whole
    episode_id = record_episode(store, [a, replace(b, prompt_ids=b.prompt_ids[:100], retokenized=True)])
    assert store.trajectories.calls(episode_id)[1].mismatch == "retokenized"
    episode_id = record_episode(store, [a, replace(b, prompt_ids=a.prompt_ids[:50])])
    assert store.trajectories.calls(episode_id)[1].mismatch == "shorter"
    assert store.trajectories.calls(episode_id)[1].prompt_ids == a.prompt_ids[:50]


def test_roles_chain_separately_and_judge_calls_do_not_break_sharing(store: MemoryStore) -> None:
    a, b = episode_calls(turns=2)
    judge = StoredCall(role="judge", model="big", prompt_ids=[1, 2, 3], completion_ids=[4], completion_logprobs=[],
                       finish_reason="stop", text="score: 1")  # fmt: skip
    episode_id = record_episode(store, [a, judge, b])
    stored = store.trajectories.calls(episode_id)
    assert [(c.role, c.extends_previous) for c in stored] == [
        ("executor", False),
        ("judge", False),
        ("executor", True),
    ]
    assert stored[2].prompt_ids == b.prompt_ids and stored[1].completion_logprobs == []


def test_another_store_on_the_same_file_continues_the_chain(tmp_path: Path) -> None:
    calls = episode_calls(turns=3)
    with MemoryStore.open(tmp_path / "m.db") as first:
        episode_id = record_episode(first, calls[:2])
    with MemoryStore.open(tmp_path / "m.db") as second:  # empty cache: rebuilds the tail from rows
        second.trajectories.record_call(episode_id, calls[2])
        stored = second.trajectories.calls(episode_id)
    assert stored[2].extends_previous and stored[2].prompt_ids == calls[2].prompt_ids


def test_bad_calls_are_refused(store: MemoryStore) -> None:
    (call,) = episode_calls(turns=1)
    with pytest.raises(UnknownRecordError):
        store.trajectories.record_call(999, call)
    episode_id = store.trajectories.start_executor_episode("t")
    with pytest.raises(ValueError, match="role"):
        store.trajectories.record_call(episode_id, replace(call, role="critic"))
    with pytest.raises(ValueError, match="one per completion id"):
        store.trajectories.record_call(episode_id, replace(call, completion_logprobs=[-0.1]))
    with pytest.raises(ValueError, match="split"):
        store.trajectories.start_executor_episode("t", split="test")
    assert store.trajectories.calls(episode_id) == []


def test_secrets_are_redacted_in_stored_text_and_the_episode_is_marked(store: MemoryStore) -> None:
    store.trajectories.set_secrets(["hunter2-operator-pass"])
    (call,) = episode_calls(turns=1)
    leaky = replace(call, text=f"found OPENAI_API_KEY={OPENAI_KEY}",
                    messages=[{"role": "user", "content": "log in with hunter2-operator-pass"}])  # fmt: skip
    episode_id = record_episode(store, [leaky])
    (stored,) = store.trajectories.calls(episode_id)
    assert stored.text == "found OPENAI_API_KEY=[REDACTED:openai_key]"
    assert stored.messages[0]["content"] == "log in with [REDACTED:configured]"
    assert stored.prompt_ids == leaky.prompt_ids  # ids cannot be redacted...
    assert store.trajectories.executor_episode(episode_id).contains_secret  # ...so the episode is marked
    raw = b"".join(bytes(str(row), "utf-8") for row in store.db.execute("select * from model_calls"))
    assert OPENAI_KEY.encode() not in raw and b"hunter2-operator-pass" not in raw
    # The next call repeats the leaky message: it is reused redacted, not stored in the clear.
    follow = replace(leaky, messages=leaky.messages + [{"role": "user", "content": "and now?"}], text="ok")
    store.trajectories.record_call(episode_id, follow)
    assert [m["content"] for m in store.trajectories.calls(episode_id)[1].messages] == [
        "log in with [REDACTED:configured]",
        "and now?",
    ]
    in_task = store.trajectories.start_executor_episode(f"use {OPENAI_KEY}")
    assert store.trajectories.executor_episode(in_task).task == "use [REDACTED:openai_key]"
    assert store.trajectories.executor_episode(in_task).contains_secret


def test_secret_marked_episodes_stay_out_of_trajectories_and_exports(
    store: MemoryStore, tmp_path: Path
) -> None:
    clean = record_episode(store, episode_calls(turns=2))
    marked = record_episode(store, episode_calls(turns=2, seed=1))
    store.trajectories.mark_secret(marked)
    # A secret configured after the text was stored is caught at export time.
    later = record_episode(store, episode_calls(turns=2, seed=2), task="deploy with token qwerty-123456")
    assert [t.episode.id for t in store.trajectories.read()] == [clean, later]
    report = export_trajectories(store, tmp_path / "out.jsonl", secrets=["qwerty-123456"])
    assert (report.episodes, report.calls, report.excluded_secret) == (1, 2, 2)
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert {row["episode_id"] for row in rows} == {clean}
    with pytest.raises(UnknownRecordError):
        store.trajectories.mark_secret(12345)


def test_jsonl_export_rows(store: MemoryStore, tmp_path: Path) -> None:
    calls = episode_calls(turns=3)
    episode_id = record_episode(store, calls, split="train", group_id="g7")
    store.episodes.record_reward(episode_id, 1.0, "verifier", "exit 0")
    report = export_trajectories(store, tmp_path / "t.jsonl", format="jsonl")
    assert (report.episodes, report.calls, report.excluded_secret) == (1, 3, 0)
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [row["call_index"] for row in rows] == [0, 1, 2]
    assert (
        rows[2]["prompt_ids"] == calls[2].prompt_ids and rows[2]["completion_ids"] == calls[2].completion_ids
    )
    assert rows[0]["completion_logprobs"] == pytest.approx(calls[0].completion_logprobs, abs=1e-6)
    assert (rows[1]["reward"], rows[1]["split"], rows[1]["group_id"], rows[1]["extends_previous"]) == (
        1.0,
        "train",
        "g7",
        True,
    )
    assert json.loads(rows[1]["messages"]) == calls[1].messages
    assert not list(tmp_path.glob("*.partial"))


def test_an_export_whose_rename_fails_leaves_no_partial_file(store: MemoryStore, tmp_path: Path) -> None:
    record_episode(store, episode_calls(turns=1), split="train")
    (tmp_path / "t.jsonl").mkdir()  # the name is taken by a directory: written whole, not renamed
    with pytest.raises(IsADirectoryError):
        export_trajectories(store, tmp_path / "t.jsonl", format="jsonl")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("t.")) == ["t.jsonl"]


def test_parquet_export_loads_with_datasets(store: MemoryStore, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    calls = episode_calls(turns=3)
    episode_id = record_episode(store, calls, split="train")
    store.episodes.record_reward(episode_id, 0.5, "judge")
    report = export_trajectories(store, tmp_path / "t.parquet", format="parquet")
    assert report.calls == 3
    loaded = datasets.load_dataset("parquet", data_files=str(tmp_path / "t.parquet"), split="train",
                                   cache_dir=str(tmp_path / "hf-cache"))  # fmt: skip
    features = loaded.features
    assert features["prompt_ids"].feature.dtype == "int32"
    assert features["completion_ids"].feature.dtype == "int32"
    assert features["completion_logprobs"].feature.dtype == "float32"
    assert features["retokenized"].dtype == "bool" and features["reward"].dtype == "float64"
    assert loaded[2]["prompt_ids"] == calls[2].prompt_ids
    assert loaded[0]["completion_logprobs"] == pytest.approx(calls[0].completion_logprobs, abs=1e-6)
    assert (loaded[0]["task"], loaded[0]["reward"], loaded[0]["role"], loaded[0]["finish_reason"]) == (
        "list the files",
        0.5,
        "executor",
        "stop",
    )


def test_filters(store: MemoryStore) -> None:
    ids = []
    for reward, split in ((0.0, "train"), (1.0, "train"), (1.0, "heldout"), (None, "live")):
        episode_id = record_episode(store, episode_calls(turns=1), split=split)
        if reward is not None:
            store.episodes.record_reward(episode_id, reward, "verifier")
        ids.append(episode_id)
    store.db.execute("update episodes set created_at = id * 100.0")
    chosen = lambda **f: [t.episode.id for t in store.trajectories.read(**f)]  # noqa: E731
    assert chosen() == ids
    assert chosen(split="train") == ids[:2]
    assert chosen(min_reward=0.5) == ids[1:3]
    assert chosen(since=ids[1] * 100.0, until=ids[3] * 100.0) == ids[1:3]
    assert chosen(limit=2) == ids[:2]
    summaries = store.trajectories.summaries(split="train")
    assert [(s.episode.id, s.calls, s.tokens, s.sampled_tokens) for s in summaries] == [
        (ids[1], 1, 360, 60), (ids[0], 1, 360, 60)]  # fmt: skip
    with pytest.raises(ValueError, match="split"):
        TrajectoryFilter(split="nightly")


def test_an_episode_carries_its_parse_failures_and_timeouts_once_finished(store: MemoryStore) -> None:
    episode_id = record_episode(store, episode_calls(turns=2), split="train")
    assert store.trajectories.executor_episode(episode_id).parse_failures is None  # running: not counted yet
    store.trajectories.finish_executor_episode(episode_id, "failed", parse_failures=2, timeouts=1)
    (trajectory,) = store.trajectories.read()
    assert (trajectory.episode.parse_failures, trajectory.episode.timeouts) == (2, 1)
    (summary,) = store.trajectories.summaries()
    assert (summary.episode.parse_failures, summary.calls) == (2, 2)


def test_chat_episodes_are_not_trajectories(store: MemoryStore) -> None:
    user_id = store.ensure_user("ana")
    session_id = store.ensure_session("s", user_id=user_id)
    chat_episode = store.episodes.start(session_id, user_id, "say hi")
    assert store.trajectories.executor_episode(chat_episode).kind == "chat"
    assert list(store.trajectories.read()) == [] and store.trajectories.summaries() == []


def test_migration_from_version_5_keeps_episodes(tmp_path: Path) -> None:
    db = connect(tmp_path / "v5.db")
    migrate(db, target=5)
    db.execute("insert into users(id, handle, created_at) values (1, 'ana', 0)")
    db.execute(
        "insert into sessions(id, key, platform, chat_id, created_at, updated_at) values (1, 'k', 'cli', 'k', 0, 0)"
    )
    db.execute("insert into episodes(session_id, user_id, task, status, reward, reward_source, created_at)"
               " values (1, 1, 'old task', 'succeeded', 1.0, 'user', 5)")  # fmt: skip
    db.close()
    with MemoryStore.open(tmp_path / "v5.db") as store:
        assert store.stats().schema_version == len(MIGRATIONS) >= 6
        old = store.trajectories.executor_episode(1)
        assert (old.kind, old.task, old.reward, old.contains_secret, old.split) == (
            "chat",
            "old task",
            1.0,
            False,
            None,
        )
        assert store.episodes.get(1).reward_source == "user"
        new = record_episode(store, episode_calls(turns=2))
        assert len(store.trajectories.calls(new)) == 2


def test_the_common_prefix_of_many_sequences_is_what_all_of_them_share() -> None:
    from array import array

    from memory import common_prefix_of

    assert common_prefix_of([[1, 2, 3, 4], [1, 2, 9], [1, 2, 3, 7], [1, 2, 3]]) == 2
    assert common_prefix_of([[5, 6], [5, 6, 7]]) == 2  # the shorter one whole
    assert common_prefix_of([[4, 1], [1, 4]]) == 0
    assert common_prefix_of([[1, 2, 3]]) == 3 and common_prefix_of([]) == 0
    assert common_prefix_of([array("i", [1, 2, 3]), array("i", [1, 2, 4])]) == 2
