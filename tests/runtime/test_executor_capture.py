"""Done-when of the trajectory issue: a multi-turn executor episode against `temper serve
executor` (the real aiohttp server over the tiny local model) is stored in memory with exactly
the ids and logprobs the server sampled: recomputing the logprobs from the stored ids with the
same model agrees to 1e-4."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from memory import MemoryStore
from runtime.executor import ExecutorServer, LocalModel, OpenAIBackend, SamplingParams, build_tiny_model
from runtime.executor.loop import ExecutorSettings
from runtime.executor.recording import MemoryRecorder
from runtime.executor.terminal import TerminalExecutor
from runtime.sandbox import SandboxOptions, open_sandbox
from runtime.tools import ToolContext

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)


async def test_stored_calls_are_exactly_what_the_server_sampled(
    tiny_dir: Path, store: MemoryStore, tmp_path: Path
) -> None:
    model = LocalModel.load(tiny_dir)
    settings = ExecutorSettings(max_turns=3, sampling=SamplingParams(temperature=1.0, max_tokens=24, seed=7))
    async with (
        ExecutorServer(model, port=0) as server,
        OpenAIBackend(server.base_url, server.served_name) as backend,
    ):
        terminal = TerminalExecutor(backend, settings, recorder=MemoryRecorder(store, tmp_path / "snapshots"))
        async with open_sandbox("local", options=SandboxOptions()) as sandbox:
            report = await terminal("list the files", ToolContext(user="ana", sandbox=sandbox, memory=store))
    assert "Commands run" in report
    [episode_id] = [row[0] for row in store.db.execute("select id from episodes where kind = 'executor'")]
    calls = store.trajectories.calls(episode_id)
    assert len(calls) >= 2  # a random tiny model never writes a valid action: two turns, then it gives up
    for call in calls:
        assert not call.retokenized and call.role == "executor"
        assert len(call.completion_ids) == len(call.completion_logprobs) > 0
        recomputed = model.logprobs_of(call.prompt_ids, call.completion_ids)
        assert max(abs(a - b) for a, b in zip(recomputed, call.completion_logprobs)) < 1e-4
        # The ids are the server's tokens, not a re-encoding of the text.
        assert model.tokenizer.decode(call.completion_ids) == call.text
    # The second call's prompt holds the first call's sampled ids, then the correction.
    first, second = calls[0], calls[1]
    assert second.prompt_ids[: len(first.prompt_ids)] == first.prompt_ids
