"""learner/ray_replay.py on a local Ray instance: the episodes Ray workers replay are recorded in
the trainer's store exactly as the in-process replay records them (same calls, token ids and
logprobs, same rewards and training rows), with the policy's weights as they stand at each
replay; a worker that cannot load the model says what to do. Ray is started once for the module
(two CPUs, no dashboard) and shut down after. Without ray installed the module skips locally
and fails under CI, which installs the `scale` extra."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pytest
import torch

from learner.policy import LoraSettings, TrainablePolicy
from learner.ray_replay import RayReplay, RaySettings
from learner.replay import ReplaySettings, replay
from learner.rows import RowBatch, RowSettings, build_rows
from learner.tasks import synthetic_suite
from memory import MemoryStore
from runtime.executor import LocalBackend, LocalModel, SamplingParams, build_tiny_model
from runtime.executor.loop import ExecutorSettings
from runtime.sandbox import BackendName
from tests.sandbox_backends import in_ci

EPISODE_FIELDS = ("task", "status", "reward", "reward_source", "reward_reason", "split", "group_id",
                  "sandbox_backend", "snapshot_id", "verifier", "contains_secret", "parse_failures",
                  "timeouts")  # fmt: skip
CALL_FIELDS = ("role", "model", "prompt_ids", "completion_ids", "finish_reason", "text", "messages",
               "adapter_version", "retokenized", "tokenizer_hash", "chat_template_hash", "sampling",
               "index", "extends_previous", "mismatch", "common_prefix")  # fmt: skip


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[None]:
    if importlib.util.find_spec("ray") is None:
        reason = "ray is not installed (pip install 'temper[scale]')"
        if in_ci():
            pytest.fail(f"{reason}: CI installs every extra, `scale` included", pytrace=False)
        pytest.skip(reason)
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)


def perturb(policy: TrainablePolicy, seed: int) -> None:
    """Move the adapter off its initialisation (LoRA's B starts at zero: it would change nothing)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in policy.trainable_parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.05)


def recorded(store: MemoryStore, attempts: list[Any]) -> list[tuple[Any, ...]]:
    """Each attempt with its episode's fields and its calls' fields, logprobs apart."""
    out = []
    for attempt in attempts:
        episode = store.trajectories.executor_episode(attempt.episode_id)
        calls = store.trajectories.calls(attempt.episode_id)
        out.append((
            replace(attempt, episode_id=0),
            tuple(getattr(episode, name) for name in EPISODE_FIELDS),
            [tuple(getattr(call, name) for name in CALL_FIELDS) for call in calls],
        ))  # fmt: skip
    return out


def logprobs(store: MemoryStore, attempts: list[Any]) -> list[float]:
    return [
        logprob
        for attempt in attempts
        for call in store.trajectories.calls(attempt.episode_id)
        for logprob in call.completion_logprobs
    ]


def rows_of(batch: RowBatch) -> list[tuple[Any, ...]]:
    """The batch's rows without their episode ids, in a fixed order (ids follow write order)."""
    return sorted((r.group_id, r.tokens, r.mask, r.advantage, r.weight, r.reward) for r in batch.rows)


def test_the_config_puts_training_replays_on_ray_only_when_it_names_a_cluster() -> None:
    from connectors.config import Config
    from connectors.learning import night_settings

    assert night_settings(Config.model_validate({}), 1, 0, None).cycle.ray is None
    config = Config.model_validate({"learner": {"ray_address": "auto", "ray_workers": 3, "torch_threads": 2}})
    assert night_settings(config, 1, 0, None).cycle.ray == RaySettings(
        address="auto", workers=3, torch_threads=2
    )


@pytest.mark.slow  # ~30 s on a busy 2-core machine: Ray's start, two workers loading the model, four replays
def test_ray_workers_record_what_the_in_process_replay_records(
    ray_instance: None, model_dir: Path, tmp_path: Path, isolating_backend: BackendName
) -> None:
    policy = TrainablePolicy.create(LocalModel.load(model_dir), LoraSettings(rank=4), seed=0)
    perturb(policy, seed=1)
    tasks = synthetic_suite(seed=0, per_family=1)[:3]
    executor = ExecutorSettings(max_turns=2, sampling=SamplingParams(temperature=1.0, max_tokens=16))
    settings = ReplaySettings(group_size=2, sandbox=isolating_backend, seed=3, executor=executor)
    cluster = RayReplay.connect(model_dir, RaySettings(address="local", workers=2))
    here, there = MemoryStore.open(tmp_path / "here.db"), MemoryStore.open(tmp_path / "there.db")

    for step in range(2):  # the second replay after the weights changed: the workers follow them
        if step:
            perturb(policy, seed=2)
        label = f"grpo{step}"
        local = asyncio.run(
            replay(tasks, LocalBackend(policy.sampler), here, tmp_path / "snap", settings, label)
        )
        remote = asyncio.run(cluster.replay(tasks, policy, there, tmp_path / "snap", settings, label))

        assert [(a.task_id, a.index) for a in remote] == [(t.id, i) for t in tasks for i in range(2)]
        assert recorded(there, remote) == recorded(here, local)
        assert logprobs(there, remote) == pytest.approx(logprobs(here, local), abs=1e-5)
        assert sum(len(call[2]) for call in recorded(there, remote)) > len(remote)  # multi-turn episodes

    # The trainer's store holds what it would have held: the same training rows, the same stats.
    here_rows = build_rows(list(here.trajectories.read(split="train")), RowSettings())
    there_rows = build_rows(list(there.trajectories.read(split="train")), RowSettings())
    assert rows_of(there_rows) == rows_of(here_rows)
    assert asdict(there_rows.stats) == asdict(here_rows.stats)


@pytest.mark.slow  # ~7 s: a worker process starting
def test_a_worker_without_the_model_says_where_to_put_it(
    ray_instance: None, tmp_path: Path, model_dir: Path, isolating_backend: BackendName
) -> None:
    policy = TrainablePolicy.create(LocalModel.load(model_dir), LoraSettings(rank=4), seed=0)
    cluster = RayReplay.connect(tmp_path / "nowhere", RaySettings(address="local", workers=1))
    settings = ReplaySettings(group_size=1, sandbox=isolating_backend)
    store = MemoryStore.open(tmp_path / "memory.db")
    with pytest.raises(Exception, match="same path on every node"):
        asyncio.run(
            cluster.replay(synthetic_suite(seed=0, per_family=1)[:1], policy, store, tmp_path, settings, "x")
        )
    assert list(store.trajectories.read()) == []
