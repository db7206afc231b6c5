"""Export of executor trajectories for training: one row per model call, JSON Lines or Parquet.

Each row carries the call's full prompt_ids (rebuilt from the shared prefix), its completion
ids and logprobs, and its episode's task, reward and split, so a learner needs nothing else:
`datasets.load_dataset("parquet", data_files=PATH)` reads the Parquet file as it is, with
prompt_ids and completion_ids as list<int32> and completion_logprobs as list<float32>.

Invariants: no secret-marked episode is exported, nor one whose stored text holds a secret
configured since it was stored (`secrets`); the report counts both as excluded. A file is
written under a `.partial` name and renamed when complete, so a failed export leaves no file
that looks whole. Parquet needs pyarrow (the `learn` extra): ImportError otherwise.
"""

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .secrets import Redactor
from .store import MemoryStore
from .trajectory_records import RecordedCall, Trajectory, TrajectoryFilter

FORMATS = ("jsonl", "parquet")
ROW_GROUP = 512  # calls per Parquet batch

COLUMNS = (
    "episode_id", "call_index", "task", "reward", "reward_source", "status", "split", "group_id",
    "snapshot_id", "verifier", "episode_created_at", "role", "model", "adapter_version",
    "tokenizer_hash", "chat_template_hash", "sampling", "prompt_ids", "completion_ids",
    "completion_logprobs", "finish_reason", "retokenized", "extends_previous", "mismatch",
    "latency_s", "text", "messages",
)  # fmt: skip


@dataclass(frozen=True)
class ExportReport:
    episodes: int
    calls: int
    excluded_secret: int  # episodes left out because they hold, or may hold, a secret


def export_trajectories(
    store: MemoryStore,
    path: Path,
    *,
    format: str = "jsonl",
    where: TrajectoryFilter = TrajectoryFilter(),
    secrets: Iterable[str] = (),
) -> ExportReport:
    """Write every call of the episodes passing `where` to `path` as `format`."""
    return write_trajectories(
        store, path, _every_call, parquet_schema, format=format, where=where, secrets=secrets
    )


RowMaker = Callable[[Trajectory], Iterable[dict[str, Any]]]


def write_trajectories(
    store: MemoryStore,
    path: Path,
    rows: RowMaker,
    schema: Callable[[], Any],
    *,
    format: str = "jsonl",
    where: TrajectoryFilter = TrajectoryFilter(),
    secrets: Iterable[str] = (),
) -> ExportReport:
    """The export's mechanics for any row layout: `rows(trajectory)` gives an episode's rows
    (counted as calls), `schema()` the Parquet schema. Secret-holding episodes are left out and
    counted; the file appears only when complete (the invariants above)."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}; got {format!r}")
    counter = _Counter(Redactor.for_secrets(secrets), rows)
    selected = store.trajectories.read(
        since=where.since,
        until=where.until,
        min_reward=where.min_reward,
        split=where.split,
        limit=where.limit,
    )
    partial = path.with_name(path.name + ".partial")
    try:
        if format == "parquet":
            _write_parquet(counter.rows(selected), partial, schema())
        else:
            with open(partial, "w", encoding="utf-8") as out:
                _write_jsonl(counter.rows(selected), out)
        partial.replace(path)
    except BaseException:  # the rename too: a directory by that name leaves no .partial behind
        partial.unlink(missing_ok=True)
        raise
    marked = store.trajectories.secret_marked_count(
        since=where.since, until=where.until, min_reward=where.min_reward, split=where.split
    )
    return ExportReport(counter.episodes, counter.calls, marked + counter.excluded)


class _Counter:
    """Turns trajectories into rows, counting what it passes and what it holds back."""

    def __init__(self, redactor: Redactor, make: RowMaker) -> None:
        self.redactor = redactor
        self.make = make
        self.episodes = self.calls = self.excluded = 0

    def rows(self, trajectories: Iterable[Trajectory]) -> Iterator[dict[str, Any]]:
        for trajectory in trajectories:
            if self._holds_secret(trajectory):
                self.excluded += 1
                continue
            self.episodes += 1
            for row in self.make(trajectory):
                self.calls += 1
                yield row

    def _holds_secret(self, trajectory: Trajectory) -> bool:
        episode = trajectory.episode
        texts = [episode.task, episode.verifier or ""] + [call.text for call in trajectory.calls]
        # Calls of a role share their leading message objects: look at each one once.
        messages = list({id(m): m for call in trajectory.calls for m in call.messages}.values())
        return any(self.redactor.text(text).found for text in texts) or bool(self.redactor.value(messages)[1])


def _every_call(trajectory: Trajectory) -> Iterator[dict[str, Any]]:
    for call in trajectory.calls:
        yield call_row(trajectory, call)


def call_row(trajectory: Trajectory, call: RecordedCall) -> dict[str, Any]:
    episode = trajectory.episode
    return {
        "episode_id": episode.id,
        "call_index": call.index,
        "task": episode.task,
        "reward": episode.reward,
        "reward_source": episode.reward_source,
        "status": episode.status,
        "split": episode.split,
        "group_id": episode.group_id,
        "snapshot_id": episode.snapshot_id,
        "verifier": episode.verifier,
        "episode_created_at": episode.created_at,
        "role": call.role,
        "model": call.model,
        "adapter_version": call.adapter_version,
        "tokenizer_hash": call.tokenizer_hash,
        "chat_template_hash": call.chat_template_hash,
        "sampling": json.dumps(call.sampling, sort_keys=True),
        "prompt_ids": call.prompt_ids,
        "completion_ids": call.completion_ids,
        "completion_logprobs": call.completion_logprobs,
        "finish_reason": call.finish_reason,
        "retokenized": call.retokenized,
        "extends_previous": call.extends_previous,
        "mismatch": call.mismatch,
        "latency_s": call.latency_s,
        "text": call.text,
        "messages": json.dumps(call.messages, ensure_ascii=False),
    }


def _write_jsonl(rows: Iterable[dict[str, Any]], out: IO[str]) -> None:
    for row in rows:
        if "completion_logprobs" in row:  # float32 widened to float64 prints 17 digits; 9 suffice
            row["completion_logprobs"] = [float(f"{value:.9g}") for value in row["completion_logprobs"]]
        out.write(json.dumps(row, ensure_ascii=False) + "\n")


def parquet_schema() -> Any:
    import pyarrow as pa

    text, int32, float64 = pa.string(), pa.int32(), pa.float64()
    types = {
        "episode_id": pa.int64(), "call_index": int32, "reward": float64, "episode_created_at": float64,
        "prompt_ids": pa.list_(int32), "completion_ids": pa.list_(int32),
        "completion_logprobs": pa.list_(pa.float32()), "retokenized": pa.bool_(),
        "extends_previous": pa.bool_(), "latency_s": float64,
    }  # fmt: skip
    return pa.schema([(name, types.get(name, text)) for name in COLUMNS])


def _write_parquet(rows: Iterable[dict[str, Any]], path: Path, schema: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with pq.ParquetWriter(path, schema) as writer:
        batch: list[dict[str, Any]] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= ROW_GROUP:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch.clear()
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
