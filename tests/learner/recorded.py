"""Live executor episodes recorded the way the runtime records them, for the learner's tests:
TerminalExecutor + MemoryRecorder in a real bwrap sandbox with a real snapshot and store; only
the model is scripted."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memory import MemoryStore
from runtime.executor import SamplingParams
from runtime.executor.completion import Completion
from runtime.executor.loop import ExecutorSettings
from runtime.executor.recording import MemoryRecorder
from runtime.executor.terminal import TerminalExecutor
from runtime.sandbox import BackendName, open_sandbox
from runtime.tools import ToolContext

BACKEND: BackendName = "bwrap"
NOTES = {"notes.txt": "apple\nbanana\ncherry\n", "src/tool.sh": "#!/bin/sh\necho tool\n"}


class Scripted:
    """An executor model that runs one turn of `commands`, then says it is done with `answer`."""

    def __init__(
        self, commands: Sequence[str], answer: str = "Done.", model: str = "planner:scripted"
    ) -> None:
        self.replies = [
            json.dumps({"analysis": "", "commands": [{"keystrokes": c, "timeout": 5} for c in commands],
                        "task_complete": False}),
            json.dumps({"analysis": answer, "commands": [], "task_complete": True}),
        ]  # fmt: skip
        self.name = model

    async def complete(self, messages: Sequence[dict[str, Any]], sampling: SamplingParams) -> Completion:
        text = self.replies.pop(0)
        return Completion(text, [], [], [], "stop", self.name)


async def record_episode(
    store: MemoryStore,
    data: Path,
    commands: Sequence[str],
    *,
    files: dict[str, str] = NOTES,
    reward: float | None = 1.0,
    on_turn: bool = True,
    query: str = "tidy the notes",
    max_snapshot_bytes: int = 1 << 20,
) -> int:
    """One terminal_task of a chat turn, as the agent records it; the turn (or the episode) rewarded."""
    session, user = store.ensure_session("telegram:1"), store.ensure_user("ana")
    turn = store.episodes.start(session, user, query)
    workspace = data / f"start-{time.monotonic_ns()}"
    for path, content in files.items():
        (workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace / path).write_text(content)
        (workspace / path).chmod(0o755 if path.endswith(".sh") else 0o644)
    recorder = MemoryRecorder(store, data / "snapshots", max_snapshot_bytes=max_snapshot_bytes)
    executor = TerminalExecutor(Scripted(commands), ExecutorSettings(max_turns=3), recorder=recorder)
    async with open_sandbox(BACKEND, workspace=workspace) as sandbox:
        context = ToolContext(user="ana", sandbox=sandbox, memory=store, session_id=session, episode_id=turn)
        await executor(query, context)
    episode = store.trajectories.summaries(limit=1)[0].episode.id
    if reward is not None:
        store.episodes.record_reward(turn if on_turn else episode, reward, "user" if on_turn else "judge")
    return episode
