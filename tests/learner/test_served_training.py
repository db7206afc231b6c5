"""Training a served executor (learner/served.py through learner/cycle.py): the real `temper serve
executor` server on 127.0.0.1 samples every replay with the trainer's adapter loaded into it, the
rows carry what it sampled, each step reports the sampler/trainer mismatch, and a promoted version
reaches the server through the daemon's switch with no request dropped.

A tiny model from scratch and tasks scored by a coin flip (so groups vary): the path, not what
it learns.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import torch

from learner import ExecutorVersions
from learner.cycle import CycleSettings, run_cycle
from learner.promote import promote
from learner.replay import ReplaySettings
from learner.rows import RowSettings, build_rows
from learner.served import ServedSampler
from learner.tasks import Task
from learner.train import TrainSettings
from learner.versions import VersionMeta
from memory import MemoryStore
from runtime import BackendName
from runtime.executor import (
    ExecutorServer,
    LocalModel,
    ModelSwitch,
    OpenAIBackend,
    SamplingParams,
    build_tiny_model,
)
from runtime.executor.loop import ExecutorSettings
from tests.fakes.tiny_model import build_tiny_adapter

torch.set_num_threads(1)

SERVED = "executor"
COIN = "[ $(od -An -N1 -tu1 /dev/urandom) -lt 128 ]"  # passes half the time, whatever was run
ONE_TURN = ExecutorSettings(max_turns=1, sampling=SamplingParams(temperature=1.0, max_tokens=16))


def coin_tasks(split: str, count: int) -> list[Task]:
    return [
        Task(f"{split}{i}", f"coin{i}", f"write {i} into n.txt", {"a.txt": "x\n"}, COIN, split=split)  # type: ignore[arg-type]
        for i in range(count)
    ]


def test_a_served_executor_is_trained_on_what_the_server_sampled_and_promoted_without_dropping_requests(
    tmp_path: Path, isolating_backend: BackendName
) -> None:
    asyncio.run(_served_cycle(tmp_path, isolating_backend))


async def _served_cycle(tmp_path: Path, sandbox: BackendName) -> None:
    model_dir = build_tiny_model(tmp_path / "tiny", seed=0)
    versions = ExecutorVersions(tmp_path / "data")
    meta = VersionMeta(base_model=str(model_dir), base_model_hash="")
    v1 = promote(versions, build_tiny_adapter(model_dir, tmp_path / "adapter", seed=1), meta)
    store = MemoryStore.open(tmp_path / "memory.db")
    replay = ReplaySettings(
        group_size=6, sandbox=sandbox, command_timeout_s=5, concurrent_tasks=2, executor=ONE_TURN
    )
    server_model = LocalModel.load(model_dir)
    async with ExecutorServer(
        server_model, port=0, served_name=SERVED, adapter_root=versions.versions_dir
    ) as server:
        served = ServedSampler(server.base_url, SERVED, adapter_dir=versions.versions_dir / ".learning")
        settings = CycleSettings(
            iterations=2, tasks_per_iteration=2, replay=replay,
            evaluation=ReplaySettings(group_size=1, sandbox=sandbox, command_timeout_s=5, seed=7, executor=ONE_TURN),
            rows=RowSettings(mask_truncated=False), train=TrainSettings(learning_rate=1e-3, tis_cap=2.0),
            served=served,
        )  # fmt: skip
        # The daemon's side: its own connection and switch, serving v1 under its version name.
        daemon = OpenAIBackend(server.base_url, SERVED)
        switch = ModelSwitch(daemon)
        await switch.activate(v1.name, v1.directory)

        result = await run_cycle(
            model_dir, coin_tasks("train", 2), coin_tasks("heldout", 2), store, tmp_path / "cycle",
            versions, settings, start_adapter=v1.directory,
        )  # fmt: skip

        # Every replay was sampled by the server, with the trainer's adapter as it stood: the
        # calls carry the server's ids and logprobs (never re-tokenised), and so do the rows.
        trajectories = [
            t for t in store.trajectories.read(split="train") if (t.episode.group_id or "").startswith("grpo")
        ]
        calls = [call for t in trajectories for call in t.calls if call.role == "executor"]
        assert len(trajectories) == 2 * 2 * 6 and calls
        steps_sampled = {call.adapter_version for call in calls}
        assert len(steps_sampled) == 2 and all(name and name.startswith("learn-") for name in steps_sampled)
        for call in calls:
            assert call.model == SERVED and not call.retokenized
            assert call.completion_ids and len(call.completion_logprobs) == len(call.completion_ids)
        batch = build_rows(trajectories, RowSettings(mask_truncated=False))
        sampled = {(tuple(c.prompt_ids), tuple(c.completion_ids)): c.completion_logprobs for c in calls}
        for row in batch.rows:
            cut = row.mask.index(1)
            key = (tuple(row.tokens[:cut]), tuple(row.tokens[cut:]))
            assert row.old_logprobs[cut:] == sampled[key]  # one-turn episodes: prompt | completion

        # Each step that trained measured the mismatch, finite, and wrote it to metrics.jsonl.
        trained = [step for step in result.steps if step.rows]
        assert trained
        for step in trained:
            figures = step.mismatch
            assert figures is not None and figures.tokens == step.trained_tokens
            values = [figures.kl, figures.ratio_mean, figures.ratio_p5, figures.ratio_p95, figures.ratio_max]
            assert all(math.isfinite(v) for v in values) and figures.kl >= 0
            assert 0.9 < figures.ratio_p50 < 1.1  # the same weights, float32 on both sides
        logged = [
            json.loads(line) for line in (tmp_path / "cycle" / "metrics.jsonl").read_text().splitlines()
        ]
        assert len(logged) == len(result.steps) and all("mismatch" in line for line in logged)

        # The cycle unloaded everything it loaded; the daemon's v1 still serves.
        names = await daemon.served_models()
        assert [n for n in names if n.startswith("learn-")] == [] and "v1" in names

        # Promotion: the daemon's switch loads v2, switches, and unloads v1 once the run pinned
        # to it ends; requests on v1 during the switch are answered.
        v2 = promote(
            versions,
            result.adapter_dir,
            VersionMeta(base_model=str(model_dir), base_model_hash="", parent="v1"),
        )
        messages = [{"role": "user", "content": "list the files"}]
        async with switch.pinned() as (running, version):
            assert version == "v1"
            switching = asyncio.create_task(switch.activate(v2.name, v2.directory))
            during = await running.complete(messages, ONE_TURN.sampling)
            await switching
            after = await running.complete(messages, ONE_TURN.sampling)
            assert during.adapter_version == after.adapter_version == "v1"
            assert "v1" in await daemon.served_models()  # its run is still going
        names = await daemon.served_models()
        assert "v2" in names and "v1" not in names and switch.version == "v2"
        answered = await daemon.complete(messages, ONE_TURN.sampling)
        assert answered.adapter_version == "v2" and answered.completion_ids
        await daemon.aclose()


def test_a_served_executor_config_trains_through_its_server_with_tis(tmp_path: Path) -> None:
    from connectors.config import Config
    from connectors.learning import night_settings

    served = Config.model_validate({
        "data_dir": str(tmp_path), "executor": {"backend": "openai", "model_dir": str(tmp_path / "m")},
        "models": {"executor": {"model": "hosted_vllm/qwen", "api_base": "http://127.0.0.1:8000/v1"}},
        "learner": {"tis_cap": 3.0},
    })  # fmt: skip
    cycle = night_settings(served, iterations=1, seed=0, deadline=None).cycle
    assert cycle.served is not None and cycle.served.model == "qwen"
    assert cycle.served.base_url == "http://127.0.0.1:8000/v1"
    assert cycle.served.adapter_dir == tmp_path / "executor" / "versions" / ".learning"
    assert cycle.train.tis_cap == 3.0
    off = served.model_copy(update={"learner": served.learner.model_copy(update={"tis_cap": 0.0})})
    assert night_settings(off, iterations=1, seed=0, deadline=None).cycle.train.tis_cap is None
    # The local backend samples with the trainer's own weights: nothing to correct.
    local = Config.model_validate({"executor": {"backend": "local", "model_dir": str(tmp_path)}})
    cycle = night_settings(local, iterations=1, seed=0, deadline=None).cycle
    assert cycle.served is None and cycle.train.tis_cap is None
