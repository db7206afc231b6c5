"""`temper trajectories list|show|export`: the command shapes scripts rely on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from connectors.cli import app
from connectors.cli.trajectories import parse_time
from memory import MemoryStore, StoredCall
from tests.cli_config import use_config

OPENAI_KEY = "sk-proj-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2"


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "configured-key-0123456789")  # a configured secret
    return use_config(tmp_path, monkeypatch)


def call(
    prompt: list[int], completion: list[int], text: str, messages: list[dict], model: str = "tiny"
) -> StoredCall:
    return StoredCall(
        role="executor", model=model, prompt_ids=prompt, completion_ids=completion,
        completion_logprobs=[-0.5] * len(completion), finish_reason="stop", text=text, messages=messages,
        adapter_version="v2", latency_s=0.04,
    )  # fmt: skip


def fill(data_dir: Path, model: str = "tiny") -> dict[str, int]:
    """Three episodes: a rewarded train one (2 calls), a heldout one, and one with a secret."""
    first = [{"role": "user", "content": "count the files"}]
    second = first + [{"role": "assistant", "content": "ls | wc -l"}, {"role": "user", "content": "3"}]
    with MemoryStore.open(data_dir / "temper.db") as store:
        good = store.trajectories.start_executor_episode(
            "count the files", split="train", snapshot_id="sha256:ab", snapshot_bytes=2048
        )
        store.trajectories.record_call(good, call([1, 2, 3], [4, 5], "ls | wc -l", first, model))
        store.trajectories.record_call(good, call([1, 2, 3, 4, 5, 6], [7], "done: 3", second, model))
        store.episodes.record_reward(good, 1.0, "verifier", "exit 0")
        store.trajectories.finish_executor_episode(good, "succeeded", parse_failures=1, timeouts=0)
        heldout = store.trajectories.start_executor_episode("print the date", split="heldout")
        store.trajectories.record_call(
            heldout, call([9, 9], [8], "date", [{"role": "user", "content": "print the date"}], model)
        )
        leaky = store.trajectories.start_executor_episode("show the env", split="train")
        store.trajectories.record_call(leaky, call([1], [2], f"OPENAI_API_KEY={OPENAI_KEY}", [], model))
        store.db.execute("update episodes set created_at = 1790000000 + id * 86400")  # 2026-09-21 onwards
    return {"good": good, "heldout": heldout, "leaky": leaky}


def test_list_shows_episodes_newest_first(data_dir: Path) -> None:
    ids = fill(data_dir)
    result = CliRunner().invoke(app, ["trajectories", "list"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["id", "time", "(UTC)"]
    assert [int(line.split()[0]) for line in lines[1:]] == [ids["leaky"], ids["heldout"], ids["good"]]
    good = next(line for line in lines if line.split()[0] == str(ids["good"]))
    assert (
        "1.00" in good and "verifier" in good and "train" in good and good.split()[-4:-3] == ["7"]
    )  # tokens: the final sequence, 6 + 1
    assert "[secret: not exported]" in lines[1]
    rows = json.loads(
        CliRunner()
        .invoke(app, ["trajectories", "list", "--split", "train", "--min-reward", "0.5", "--json"])
        .stdout
    )
    assert [(r["id"], r["calls"], r["tokens"], r["reward"]) for r in rows] == [(ids["good"], 2, 7, 1.0)]


def test_list_time_filters_and_bad_values(data_dir: Path) -> None:
    ids = fill(data_dir)
    rows = json.loads(
        CliRunner().invoke(app, ["trajectories", "list", "--since", "2026-09-23", "--json"]).stdout
    )
    assert [r["id"] for r in rows] == [ids["leaky"], ids["heldout"]]
    rows = json.loads(
        CliRunner()
        .invoke(app, ["trajectories", "list", "--until", "2026-09-23T00:00+00:00", "--json"])
        .stdout
    )
    assert [r["id"] for r in rows] == [ids["good"]]
    assert (
        json.loads(CliRunner().invoke(app, ["trajectories", "list", "--since", "1d", "--json"]).stdout) == []
    )
    bad = CliRunner().invoke(app, ["trajectories", "list", "--since", "yesterday"])
    assert bad.exit_code == 2 and "neither an ISO date" in bad.stderr
    bad_split = CliRunner().invoke(app, ["trajectories", "list", "--split", "nightly"])
    assert bad_split.exit_code == 2 and "split must be one of" in bad_split.stderr


def test_parse_time() -> None:
    assert parse_time("2026-01-01") == 1767225600.0
    assert parse_time("7d", now=1_000_000.0) == 1_000_000.0 - 7 * 86400
    assert parse_time("30m", now=5000.0) == 5000.0 - 1800


def test_show_prints_calls_with_stored_text(data_dir: Path) -> None:
    ids = fill(data_dir)
    result = CliRunner().invoke(app, ["trajectories", "show", str(ids["good"])])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "task: count the files" in out and "reward: 1.00 (verifier: exit 0)" in out
    assert "snapshot: sha256:ab (2,048 bytes)" in out
    assert "parse failures: 1  timeouts: 0" in out
    assert (
        "call 0 executor  model: tiny  adapter: v2  tokens: 3 prompt + 2 sampled  finish: stop  retokenized: no"
        in out
    )
    assert "stored whole (first call)" in out and "extends previous" in out
    assert "    ls | wc -l" in out and "    done: 3" in out
    assert (
        out.count("count the files") == 2
    )  # the task, then call 0's message; call 1 shows only what it added
    leaky = CliRunner().invoke(app, ["trajectories", "show", str(ids["leaky"])]).stdout
    assert OPENAI_KEY not in leaky and "[REDACTED:openai_key]" in leaky and "never exported" in leaky
    missing = CliRunner().invoke(app, ["trajectories", "show", "999"])
    assert missing.exit_code == 1 and "no episode with id 999" in missing.stderr


def test_show_decodes_with_a_tokenizer(data_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.train_from_iterator(
        ["ls -la | wc -l", "done: 3 files"],
        trainers.BpeTrainer(vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()),
    )
    PreTrainedTokenizerFast(tokenizer_object=core).save_pretrained(tmp_path / "tok")
    completion = core.encode("ls -la").ids
    with MemoryStore.open(data_dir / "temper.db") as store:
        episode_id = store.trajectories.start_executor_episode("list")
        store.trajectories.record_call(
            episode_id,
            call(core.encode("list files").ids, completion, "stored text", [], str(tmp_path / "tok")),
        )
    by_model = CliRunner().invoke(app, ["trajectories", "show", str(episode_id)])  # the model is a directory
    assert by_model.exit_code == 0, by_model.output
    assert "completion (decoded):\n    ls -la" in by_model.stdout and "    list files" in by_model.stdout
    explicit = CliRunner().invoke(
        app, ["trajectories", "show", str(episode_id), "--tokenizer", str(tmp_path / "tok")]
    )
    assert "    ls -la" in explicit.stdout


def test_export_jsonl_and_parquet(data_dir: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    ids = fill(data_dir)
    out = tmp_path / "calls.jsonl"
    result = CliRunner().invoke(app, ["trajectories", "export", str(out), "--split", "train"])
    assert result.exit_code == 0, result.output
    assert (
        "exported 2 calls from 1 episodes" in result.stdout
        and "excluded 1 episodes that contain secrets" in result.stdout
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["episode_id"], r["call_index"], r["prompt_ids"]) for r in rows] == [
        (ids["good"], 0, [1, 2, 3]),
        (ids["good"], 1, [1, 2, 3, 4, 5, 6]),
    ]
    parquet = tmp_path / "calls.parquet"
    result = CliRunner().invoke(app, ["trajectories", "export", str(parquet), "--min-reward", "0"])
    assert "exported 2 calls from 1 episodes" in result.stdout
    loaded = datasets.load_dataset(
        "parquet", data_files=str(parquet), split="train", cache_dir=str(tmp_path / "hf")
    )
    assert loaded.features["completion_ids"].feature.dtype == "int32"
    assert loaded[1]["completion_ids"] == [7] and loaded[1]["completion_logprobs"] == [-0.5]
    everything = CliRunner().invoke(
        app, ["trajectories", "export", str(tmp_path / "all.data"), "--format", "jsonl"]
    )
    assert "exported 3 calls from 2 episodes" in everything.stdout
    assert OPENAI_KEY not in (tmp_path / "all.data").read_text()


def test_export_holds_back_text_with_a_configured_secret(data_dir: Path, tmp_path: Path) -> None:
    with MemoryStore.open(data_dir / "temper.db") as store:  # stored before the key was configured
        episode_id = store.trajectories.start_executor_episode("use configured-key-0123456789 to log in")
        store.trajectories.record_call(episode_id, call([1], [2], "ok", []))
    result = CliRunner().invoke(app, ["trajectories", "export", str(tmp_path / "x.jsonl")])
    assert "exported 0 calls from 0 episodes" in result.stdout and "excluded 1 episodes" in result.stdout


@pytest.mark.parametrize("layout", [[], ["--format", "trl"]])
def test_an_export_that_cannot_be_written_is_one_line(
    data_dir: Path, tmp_path: Path, layout: list[str]
) -> None:
    fill(data_dir)
    (tmp_path / "notes.txt").write_text("keep\n")
    target = tmp_path / "notes.txt" / "calls.jsonl"
    result = CliRunner().invoke(app, ["trajectories", "export", str(target), *layout])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert result.stderr == f"temper: cannot write {target}: Not a directory\n"
    taken = tmp_path / "calls.jsonl"  # a directory: refused as FILE, nothing written beside it
    taken.mkdir()
    onto_a_directory = CliRunner().invoke(app, ["trajectories", "export", str(taken), *layout])
    assert onto_a_directory.exit_code == 2 and "Traceback" not in onto_a_directory.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("calls")) == ["calls.jsonl"]


def test_export_bad_format(data_dir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["trajectories", "export", str(tmp_path / "x"), "--format", "csv"])
    assert result.exit_code == 2 and "jsonl or parquet" in result.stderr
