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

Written by memory's export (`write_trajectories`, memory/trajectory_export.py), so its
invariants hold: no secret-marked episode is written, nor one whose stored text holds a secret
configured since (`secrets`); the report counts both; the file appears only when complete.
Parquet needs pyarrow (the `learn` extra).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from learner import RowSettings, group_advantages
from memory import ExportReport, MemoryStore, Trajectory, TrajectoryFilter, write_trajectories

COLUMNS = (
    "prompt", "completion", "reward", "reward_source", "group_id", "advantage", "episode_id",
    "call_index", "split", "finish_reason", "model", "adapter_version",
)  # fmt: skip
TOKEN_COLUMNS = ("prompt_ids", "completion_ids", "completion_logprobs")


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
    advantages = episode_advantages(store, settings)

    def rows(trajectory: Trajectory) -> Iterator[dict[str, Any]]:
        episode = trajectory.episode
        for call in trajectory.calls:
            if call.role != "executor":
                continue
            row: dict[str, Any] = {
                "prompt": [_message(m) for m in call.messages],
                "completion": [{"role": "assistant", "content": call.text}],
                "reward": episode.reward,
                "reward_source": episode.reward_source,
                "group_id": episode.group_id,
                "advantage": advantages.get(episode.id),
                "episode_id": episode.id,
                "call_index": call.index,
                "split": episode.split,
                "finish_reason": call.finish_reason,
                "model": call.model,
                "adapter_version": call.adapter_version,
            }
            if with_tokens:
                row["prompt_ids"] = call.prompt_ids
                row["completion_ids"] = call.completion_ids
                row["completion_logprobs"] = call.completion_logprobs
            yield row

    return write_trajectories(
        store, path, rows, lambda: parquet_schema(with_tokens),
        format=format, where=where or TrajectoryFilter(), secrets=secrets,
    )  # fmt: skip


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


def _message(message: dict[str, Any]) -> dict[str, str]:
    """An OpenAI message as role and text content, the shape every chat template reads."""
    content = message.get("content")
    text = content if isinstance(content, str) else "" if content is None else json.dumps(content)
    return {"role": str(message.get("role", "user")), "content": text}


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
