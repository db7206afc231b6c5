"""The hand-off to trl: executor trajectories as the rows trl's trainers read.

    report = export_trl(store, path, format="jsonl", where=TrajectoryFilter(), secrets=...)

One row per executor model call, in trl's conversational prompt-completion layout:

    prompt          the chat the executor was given (OpenAI messages: role, content)
    completion      [{"role": "assistant", "content": what it sampled}]
    reward, reward_source, group_id, advantage, episode_id, call_index, split,
    finish_reason, model, adapter_version
    prompt_ids, completion_ids, completion_logprobs     only with `with_tokens`

A row is a call, not an episode: each call's prompt already holds the episode so far (earlier
replies, command output), so prompt + completion is exactly what the model read and sampled,
and any chat template renders it (an episode-long `messages` row would need a template that
marks assistant turns for trl's assistant-only loss). trl's SFTTrainer reads `prompt` and
`completion` as they are; KTOTrainer takes them with a boolean `label` a user derives from
`reward` or `advantage`; GRPOTrainer reads `prompt` (it samples and rewards on its own).

`advantage` is the episode's group-relative advantage as the learner computes it
(learner/rows.py, default RowSettings): score = reward - parse_failure_penalty * parse failures,
minus the mean score of its group, over every rewarded, non-held-out, non-secret episode of the
group in the store, so export filters do not change it; None for an episode the learner would
not train on (held out, unrewarded, ungrouped). Planner and judge calls are not rows.

Invariants, as memory's export (memory/trajectory_export.py): no secret-marked episode is
written, nor one whose stored text holds a secret configured since (`secrets`); the report
counts both. The file is written under a `.partial` name and renamed when complete. Parquet
needs pyarrow (the `learn` extra).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from learner import RowSettings, group_advantages
from memory import ExportReport, MemoryStore, Redactor, Trajectory, TrajectoryFilter

COLUMNS = (
    "prompt", "completion", "reward", "reward_source", "group_id", "advantage", "episode_id",
    "call_index", "split", "finish_reason", "model", "adapter_version",
)  # fmt: skip
TOKEN_COLUMNS = ("prompt_ids", "completion_ids", "completion_logprobs")
ROW_GROUP = 512  # rows per Parquet batch


def export_trl(
    store: MemoryStore,
    path: Path,
    *,
    format: str = "jsonl",
    where: TrajectoryFilter | None = None,
    secrets: Iterable[str] = (),
    with_tokens: bool = False,
    settings: RowSettings | None = None,
) -> ExportReport:
    """Write one trl row per executor call of the episodes passing `where` (all by default) to
    `path`; advantages as build_rows computes them with `settings` (its defaults by default)."""
    where = where or TrajectoryFilter()
    if format not in ("jsonl", "parquet"):
        raise ValueError(f"format must be jsonl or parquet; got {format!r}")
    rows = _Rows(Redactor.for_secrets(secrets), episode_advantages(store, settings), with_tokens)
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
            _write_parquet(rows.rows(selected), partial, with_tokens)
        else:
            with open(partial, "w", encoding="utf-8") as out:
                _write_jsonl(rows.rows(selected), out)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(path)
    marked = store.trajectories.secret_marked_count(
        since=where.since, until=where.until, min_reward=where.min_reward, split=where.split
    )
    return ExportReport(rows.episodes, rows.calls, marked + rows.excluded)


def episode_advantages(store: MemoryStore, settings: RowSettings | None = None) -> dict[int, float]:
    """Episode id -> advantage within its group, for every episode the learner would train on."""
    settings = settings or RowSettings()
    groups: dict[str, list[tuple[int, float]]] = {}
    for summary in store.trajectories.summaries(limit=None):
        episode = summary.episode
        if episode.contains_secret or episode.split == "heldout":
            continue
        if episode.reward is None or episode.group_id is None:
            continue
        score = episode.reward - settings.parse_failure_penalty * (episode.parse_failures or 0)
        groups.setdefault(episode.group_id, []).append((episode.id, score))
    advantages: dict[int, float] = {}
    for members in groups.values():
        scores = [score for _, score in members]
        for (episode_id, _), advantage in zip(
            members, group_advantages(scores, scale_by_std=settings.scale_by_std), strict=True
        ):
            advantages[episode_id] = advantage
    return advantages


class _Rows:
    """Turns trajectories into trl rows, counting what it passes and what it holds back."""

    def __init__(self, redactor: Redactor, advantages: dict[int, float], with_tokens: bool) -> None:
        self.redactor = redactor
        self.advantages = advantages
        self.with_tokens = with_tokens
        self.episodes = self.calls = self.excluded = 0

    def rows(self, trajectories: Iterable[Trajectory]) -> Iterator[dict[str, Any]]:
        for trajectory in trajectories:
            if self._holds_secret(trajectory):
                self.excluded += 1
                continue
            self.episodes += 1
            episode = trajectory.episode
            for call in trajectory.calls:
                if call.role != "executor":
                    continue
                self.calls += 1
                row: dict[str, Any] = {
                    "prompt": [_message(m) for m in call.messages],
                    "completion": [{"role": "assistant", "content": call.text}],
                    "reward": episode.reward,
                    "reward_source": episode.reward_source,
                    "group_id": episode.group_id,
                    "advantage": self.advantages.get(episode.id),
                    "episode_id": episode.id,
                    "call_index": call.index,
                    "split": episode.split,
                    "finish_reason": call.finish_reason,
                    "model": call.model,
                    "adapter_version": call.adapter_version,
                }
                if self.with_tokens:
                    row["prompt_ids"] = call.prompt_ids
                    row["completion_ids"] = call.completion_ids
                    row["completion_logprobs"] = call.completion_logprobs
                yield row

    def _holds_secret(self, trajectory: Trajectory) -> bool:
        # The same test as memory's export: any stored text the configured secrets turn up in.
        episode = trajectory.episode
        texts = [episode.task, episode.verifier or ""] + [call.text for call in trajectory.calls]
        messages = list({id(m): m for call in trajectory.calls for m in call.messages}.values())
        return any(self.redactor.text(text).found for text in texts) or bool(self.redactor.value(messages)[1])


def _message(message: dict[str, Any]) -> dict[str, str]:
    """An OpenAI message as role and text content, the shape every chat template reads."""
    content = message.get("content")
    text = content if isinstance(content, str) else "" if content is None else json.dumps(content)
    return {"role": str(message.get("role", "user")), "content": text}


def _write_jsonl(rows: Iterable[dict[str, Any]], out: IO[str]) -> None:
    for row in rows:
        if "completion_logprobs" in row:  # float32 values: 9 digits give back the same float32
            row["completion_logprobs"] = [float(f"{value:.9g}") for value in row["completion_logprobs"]]
        out.write(json.dumps(row, ensure_ascii=False) + "\n")


def parquet_schema(with_tokens: bool = False) -> Any:
    import pyarrow as pa

    text, float64 = pa.string(), pa.float64()
    messages = pa.list_(pa.struct([("role", text), ("content", text)]))
    types = {
        "prompt": messages, "completion": messages, "reward": float64, "advantage": float64,
        "episode_id": pa.int64(), "call_index": pa.int32(), "prompt_ids": pa.list_(pa.int32()),
        "completion_ids": pa.list_(pa.int32()), "completion_logprobs": pa.list_(pa.float32()),
    }  # fmt: skip
    names = COLUMNS + (TOKEN_COLUMNS if with_tokens else ())
    return pa.schema([(name, types.get(name, text)) for name in names])


def _write_parquet(rows: Iterable[dict[str, Any]], path: Path, with_tokens: bool) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = parquet_schema(with_tokens)
    with pq.ParquetWriter(path, schema) as writer:
        batch: list[dict[str, Any]] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= ROW_GROUP:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch.clear()
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
