"""Recording executor episodes in memory, replayable and at token level.

An episode keeps what is needed to run it again from the same start: the query, a snapshot of
the workspace as the executor found it (content-addressed, so identical workspaces share one
file; skipped, and the episode marked not replayable, when the workspace is larger than
`max_snapshot_bytes`), the sandbox backend, and the verifier when the task has one. Every call
is stored as the model produced it (memory/trajectories.py packs the ids), with the messages
it was given so that secret detection sees the prompt text too. An episode started for a chat
turn is linked to the turn's episode (`parent_episode_id`, from `ToolContext.episode_id`):
the learner reads the turn's reward (the judge's, or the user's /good and /bad) through it.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from memory import MemoryStore, StoredCall
from runtime.executor.completion import Completion
from runtime.executor.loop import ExecutorRun
from runtime.sandbox import Snapshot
from runtime.tools import ToolContext

DEFAULT_MAX_SNAPSHOT_BYTES = 64 << 20


class MemoryRecorder:
    def __init__(
        self,
        store: MemoryStore,
        snapshot_dir: Path,
        *,
        role: str = "executor",
        split: str = "live",
        group_id: str | None = None,
        verifier: str | None = None,
        max_snapshot_bytes: int = DEFAULT_MAX_SNAPSHOT_BYTES,
        initial_snapshot: Snapshot | None = None,
    ) -> None:
        self.store = store
        self.snapshot_dir = Path(snapshot_dir)
        self.role = role
        self.split = split
        self.group_id = group_id
        self.verifier = verifier
        self.max_snapshot_bytes = max_snapshot_bytes
        self.initial_snapshot = initial_snapshot  # known already (a replay started from it)

    async def start(self, query: str, backend: str, context: ToolContext) -> int:
        sandbox = context.require_sandbox()
        snapshot_id, snapshot_bytes = None, None
        if self.initial_snapshot is not None:
            snapshot_id, snapshot_bytes = self.initial_snapshot.id, self.initial_snapshot.size_bytes
        elif await asyncio.to_thread(_tree_bytes, sandbox.workspace) <= self.max_snapshot_bytes:
            snapshot = await sandbox.snapshot(self.snapshot_dir)
            snapshot_id, snapshot_bytes = snapshot.id, snapshot.size_bytes
        user_id = self.store.user_id(context.user)
        return self.store.trajectories.start_executor_episode(
            query,
            split=self.split,
            group_id=self.group_id,
            sandbox_backend=sandbox.name,
            snapshot_id=snapshot_id,
            snapshot_bytes=snapshot_bytes,
            verifier=self.verifier,
            session_id=context.session_id,
            user_id=user_id,
            parent_episode_id=context.episode_id,
        )

    async def record(self, episode_id: int, completion: Completion, messages: list[dict[str, Any]]) -> None:
        self.store.trajectories.record_call(
            episode_id,
            StoredCall(
                role=self.role if not completion.model.startswith("planner:") else "planner",
                model=completion.model,
                prompt_ids=completion.prompt_ids,
                completion_ids=completion.completion_ids,
                completion_logprobs=completion.completion_logprobs,
                finish_reason=completion.finish_reason,
                text=completion.text,
                messages=messages,
                adapter_version=completion.adapter_version,
                retokenized=completion.retokenized,
                tokenizer_hash=completion.tokenizer_hash,
                chat_template_hash=completion.chat_template_hash,
                latency_s=completion.latency_s,
                sampling=completion.sampling.as_dict(),
            ),
        )

    async def finish(self, episode_id: int, run: ExecutorRun) -> None:
        self.store.trajectories.finish_executor_episode(
            episode_id,
            "succeeded" if run.completed else "failed",
            parse_failures=run.parse_failures,
            timeouts=run.timeouts,
        )


def _tree_bytes(root: Path) -> int:
    total = 0
    for directory, _, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                continue  # removed while walking: it is not in the snapshot either
    return total
