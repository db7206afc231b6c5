"""`temper trajectories export --format trl`: rows in trl's prompt-completion layout."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from connectors.cli import app
from learner import RowSettings, build_rows
from memory import MemoryStore, StoredCall
from tests.cli_config import use_config

OPENAI_KEY = "sk-proj-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2"
SYSTEM = {"role": "system", "content": "You run shell commands."}


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "configured-key-0123456789")  # a configured secret
    return use_config(tmp_path, monkeypatch)


def call(
    prompt: list[int], completion: list[int], text: str, messages: list[dict], role: str = "executor"
) -> StoredCall:
    return StoredCall(
        role=role, model="tiny", prompt_ids=prompt, completion_ids=completion,
        completion_logprobs=[-0.25] * len(completion), finish_reason="stop", text=text, messages=messages,
        adapter_version="v3", latency_s=0.01,
    )  # fmt: skip


def fill(data_dir: Path) -> dict[str, int]:
    """Group g1: `two_calls` (reward 1, two executor calls and a planner call), `failed`
    (reward 0) and `late` (reward 1 with a parse failure: score 0.5), created a day apart; a
    held-out episode of the same group, and one that printed a key."""
    first = [SYSTEM, {"role": "user", "content": "count the files"}]
    second = first + [{"role": "assistant", "content": "ls | wc -l"}, {"role": "user", "content": "3"}]
    ids: dict[str, int] = {}
    with MemoryStore.open(data_dir / "temper.db") as store:
        t = store.trajectories
        ids["two_calls"] = t.start_executor_episode("count the files", split="train", group_id="g1")
        t.record_call(ids["two_calls"], call([1, 2, 3], [4, 5], "ls | wc -l", first))
        t.record_call(ids["two_calls"], call([], [], "plan", [], role="planner"))
        t.record_call(ids["two_calls"], call([1, 2, 3, 4, 5, 6], [7], "done: 3", second))
        ids["failed"] = t.start_executor_episode("count the files", split="train", group_id="g1")
        t.record_call(ids["failed"], call([1, 2, 3], [8], "rm -rf .", first))
        ids["late"] = t.start_executor_episode("count the files", split="train", group_id="g1")
        t.record_call(ids["late"], call([1, 2, 3], [4, 5], "ls | wc -l", first))
        ids["heldout"] = t.start_executor_episode("count the files", split="heldout", group_id="g1")
        t.record_call(ids["heldout"], call([1, 2, 3], [9], "find .", first))
        ids["leaky"] = t.start_executor_episode("show the env", split="train", group_id="g1")
        t.record_call(ids["leaky"], call([1], [2], f"OPENAI_API_KEY={OPENAI_KEY}", first))
        for name, reward, failures in (("two_calls", 1.0, 0), ("failed", 0.0, 0), ("late", 1.0, 1),
                                       ("heldout", 1.0, 0), ("leaky", 1.0, 0)):  # fmt: skip
            t.finish_executor_episode(ids[name], "succeeded", parse_failures=failures, timeouts=0)
            store.episodes.record_reward(ids[name], reward, "verifier", "exit 0")
        store.db.execute("update episodes set created_at = 1790000000 + id * 86400")
    return ids


def export(tmp_path: Path, name: str, *args: str) -> tuple[str, Path]:
    out = tmp_path / name
    result = CliRunner().invoke(app, ["trajectories", "export", str(out), "--format", "trl", *args])
    assert result.exit_code == 0, result.output
    return result.stdout, out


def test_trl_rows_load_with_datasets(data_dir: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    ids = fill(data_dir)
    stdout, out = export(tmp_path, "trl.jsonl")
    assert "exported 5 calls from 4 episodes" in stdout and "(trl, jsonl," in stdout
    assert "excluded 1 episodes that contain secrets" in stdout
    rows = datasets.load_dataset("json", data_files=str(out), split="train", cache_dir=str(tmp_path / "hf"))
    assert rows.column_names == [
        "prompt", "completion", "reward", "reward_source", "group_id", "advantage", "episode_id",
        "call_index", "split", "finish_reason", "model", "adapter_version",
    ]  # fmt: skip
    assert [(r["episode_id"], r["call_index"]) for r in rows] == [
        (ids["two_calls"], 0),
        (ids["two_calls"], 2),
        (ids["failed"], 0),
        (ids["late"], 0),
        (ids["heldout"], 0),
    ]  # fmt: skip  (the planner call, index 1, is no row)
    second = rows[1]
    assert second["prompt"] == [
        SYSTEM,
        {"role": "user", "content": "count the files"},
        {"role": "assistant", "content": "ls | wc -l"},
        {"role": "user", "content": "3"},
    ]
    assert second["completion"] == [{"role": "assistant", "content": "done: 3"}]
    assert (second["reward"], second["reward_source"], second["group_id"], second["split"]) == (
        1.0, "verifier", "g1", "train"
    )  # fmt: skip
    assert (second["model"], second["adapter_version"], second["finish_reason"]) == ("tiny", "v3", "stop")
    # Scores 1, 0 and 1 - 0.5 (a parse failure): mean 0.5. Held out: no advantage.
    advantages = {r["episode_id"]: r["advantage"] for r in rows}
    assert advantages == {ids["two_calls"]: 0.5, ids["failed"]: -0.5, ids["late"]: 0.0, ids["heldout"]: None}
    assert OPENAI_KEY not in out.read_text() and "prompt_ids" not in out.read_text()


def test_advantages_match_the_learner_and_ignore_filters(data_dir: Path, tmp_path: Path) -> None:
    ids = fill(data_dir)
    with MemoryStore.open(data_dir / "temper.db") as store:
        batch = build_rows(store.trajectories.read(split="train"), RowSettings())
    learner = {row.episode_id: row.advantage for row in batch.rows}
    _, out = export(tmp_path, "trl.jsonl", "--split", "train")
    exported = {r["episode_id"]: r["advantage"] for r in map(json.loads, out.read_text().splitlines())}
    assert exported.keys() == learner.keys()
    assert all(math.isclose(exported[key], learner[key]) for key in learner)
    # Only the last episode of the group is exported: its advantage is still the group's.
    stdout, out = export(tmp_path, "late.jsonl", "--since", "2026-09-24", "--split", "train")
    assert "exported 1 calls from 1 episodes" in stdout
    assert [json.loads(line)["advantage"] for line in out.read_text().splitlines()] == [learner[ids["late"]]]


def test_trl_parquet_with_tokens(data_dir: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    pytest.importorskip("pyarrow")
    ids = fill(data_dir)
    stdout, out = export(tmp_path, "trl.parquet", "--with-tokens", "--min-reward", "0.5")
    assert "exported 4 calls from 3 episodes" in stdout and "(trl, parquet," in stdout
    rows = datasets.load_dataset(
        "parquet", data_files=str(out), split="train", cache_dir=str(tmp_path / "hf")
    )
    assert rows.column_names[-3:] == ["prompt_ids", "completion_ids", "completion_logprobs"]
    assert rows.features["completion_ids"].feature.dtype == "int32"
    first = rows[1]
    assert (first["episode_id"], first["prompt_ids"], first["completion_ids"]) == (
        ids["two_calls"], [1, 2, 3, 4, 5, 6], [7]
    )  # fmt: skip
    assert first["completion_logprobs"] == [-0.25]
    assert first["completion"] == [{"role": "assistant", "content": "done: 3"}]


def test_trl_holds_back_text_with_a_configured_secret(data_dir: Path, tmp_path: Path) -> None:
    with MemoryStore.open(data_dir / "temper.db") as store:  # stored before the key was configured
        episode_id = store.trajectories.start_executor_episode("use configured-key-0123456789 to log in")
        store.trajectories.record_call(episode_id, call([1], [2], "ok", []))
    stdout, out = export(tmp_path, "x.jsonl")
    assert "exported 0 calls from 0 episodes" in stdout and "excluded 1 episodes" in stdout
    assert out.read_text() == ""


def test_sft_trainer_takes_the_rows(data_dir: Path, tmp_path: Path) -> None:
    """trl's SFTTrainer prepares the exported prompt-completion rows (the completion, and only
    it, is trained on) and takes one step on the tiny model."""
    pytest.importorskip("trl", reason="trl is not installed (pip install 'temper[bench]')")
    datasets = pytest.importorskip("datasets")
    from trl import SFTConfig, SFTTrainer

    from runtime.executor import build_tiny_model

    fill(data_dir)
    _, out = export(tmp_path, "trl.jsonl", "--split", "train", "--min-reward", "1")
    rows = datasets.load_dataset("json", data_files=str(out), split="train", cache_dir=str(tmp_path / "hf"))
    model = build_tiny_model(tmp_path / "model", layers=1, hidden=64)
    trainer = SFTTrainer(
        model=str(model),
        train_dataset=rows.select_columns(["prompt", "completion"]),
        args=SFTConfig(
            output_dir=str(tmp_path / "sft"),
            max_steps=1,
            per_device_train_batch_size=3,
            use_cpu=True,
            bf16=False,
            report_to="none",
            save_strategy="no",
            dataset_num_proc=None,
        ),
    )
    prepared_rows: Any = trainer.train_dataset
    tokenizer: Any = trainer.processing_class
    prepared = prepared_rows[1]  # two_calls' second call
    trained = [t for t, label in zip(prepared["input_ids"], prepared["labels"], strict=True) if label != -100]
    assert tokenizer.decode(trained) == "done: 3<|end|>\n"  # the prompt is not trained on
    loss = trainer.train().training_loss
    assert math.isfinite(loss) and loss > 0
