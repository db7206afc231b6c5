"""Training replays on a Ray cluster: the same attempts as learner/replay.py, run by workers
that each hold a copy of the policy, their episodes streamed back into the trainer's store.

    cluster = RayReplay.connect(model_dir, RaySettings(address="auto", workers=4))
    attempts = await cluster.replay(tasks, trainer.policy, store, snapshot_dir, settings, label)

How it works:
- A worker is a Ray actor (`ReplayWorker`) that loads the executor's model directory once, from
  the same path on its node (a shared filesystem, or the model copied there), with the cycle's
  device, dtype and attention implementation. Each replay ships the policy's LoRA adapter as it
  stands (PEFT files, a few MB, put in Ray's object store once and read by every worker); a
  worker loads it into its `PeftModel` only when it changed, then samples from a `LocalModel`
  over that module with the same name the trainer's sampler has. So a worker's completions are
  the trainer's own (the same seeds give the same token ids, logprobs equal within float
  tolerance) and there is no sampler/trainer mismatch to correct, which an HTTP server (vLLM)
  would bring: its kernels and precision differ from the trainer's. Serving the replays from
  vLLM instead is the openai backend's path (docs/learner.md), not this one.
- The tasks are cut into chunks (at most `concurrent_tasks` tasks, and no more than an even share
  per worker); an idle worker takes the next chunk, runs learner/replay.py's `replay` on it, in
  its own sandboxes (each node needs bwrap or docker), recording into a scratch store of its own,
  and sends back each attempt with its episode and calls read from that store.
- As each chunk comes back, its episodes are written into the trainer's store (in task and
  attempt order within the chunk) through the store's own API: the texts are redacted again
  with the trainer's configured secrets, an episode the worker marked as holding a secret stays
  marked, and a call's `extends_previous` is worked out here as it is in-process. The attempts
  come back in task order with the trainer's episode ids, as `replay` returns them.
- When a chunk fails, the others are cancelled before the failure is raised (`all_or_none`'s
  rule). The episodes name the task's snapshot id; the snapshot file itself is not kept.
- A worker keeps no directory between calls: each chunk's store, snapshots and sandboxes are in a
  temporary directory removed when the chunk ends, and the adapter's files are written only
  while PEFT loads them. Ray ends an actor without a word (its last handle gone, `ray.shutdown`),
  so a directory the worker held for its lifetime would outlive it, one per worker per night.

The actors live as long as this object (Ray ends an actor when its last handle goes); a local
Ray instance that `connect` started (address "local") ends with this process.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from learner.replay import LEARNER_USER, Attempt, ReplaySettings, replay
from learner.tasks import Task
from memory import ExecutorEpisode, MemoryStore, RecordedCall, StoredCall

if TYPE_CHECKING:
    from learner.policy import TrainablePolicy

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
_STORED_FIELDS = tuple(field.name for field in fields(StoredCall))


class RayUnavailable(RuntimeError):
    """`[learner] ray_address` is set but Ray is not installed or its cluster cannot be reached."""


@dataclass(frozen=True)
class RaySettings:
    address: str  # "auto" (a running cluster), "local" (start one here), or "ray://host:10001" etc.
    workers: int = 2  # actors, each with a copy of the model
    cpus_per_worker: float = 1.0
    gpus_per_worker: float = 0.0  # e.g. 1 to give each worker a GPU (device "cuda" then)
    torch_threads: int = 1

    def __post_init__(self) -> None:
        if not self.address:
            raise ValueError("a Ray address is 'auto', 'local' or a cluster address")
        if self.workers < 1:
            raise ValueError(f"Ray replays need at least one worker; got {self.workers}")


@dataclass(frozen=True)
class LoadSettings:
    """How a worker loads the model directory (the cycle's `LocalModel.load` arguments)."""

    device: str = "cpu"
    dtype: str | None = None
    attn_implementation: str | None = None


@dataclass(frozen=True)
class PolicyAdapter:
    """The policy being trained, as a worker needs it: its LoRA adapter's PEFT files, their
    digest (a worker reloads only when it changes) and the name the trainer's sampler answers to."""

    files: dict[str, bytes]
    digest: str
    name: str

    @classmethod
    def of(cls, policy: TrainablePolicy) -> PolicyAdapter:
        with tempfile.TemporaryDirectory(prefix="temper-adapter-") as scratch:
            directory = policy.save_adapter(Path(scratch) / "adapter")
            files = {name: (directory / name).read_bytes() for name in ADAPTER_FILES}
        digest = hashlib.sha256(b"".join(files[name] for name in ADAPTER_FILES)).hexdigest()
        return cls(files, digest, policy.sampler.name)


@dataclass(frozen=True)
class ReplayedAttempt:
    """One attempt as a worker sends it back: the attempt, its episode and its calls."""

    attempt: Attempt
    episode: ExecutorEpisode
    calls: list[RecordedCall]


class ReplayWorker:
    """A Ray actor's body (made an actor in `RayReplay.connect`): the model, the policy's adapter
    on it, and replays of chunks of tasks into a scratch store."""

    def __init__(self, model_dir: str, load: LoadSettings, threads: int) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        from runtime.executor import ExecutorTokenizer
        from runtime.executor.local_model import resolve_device, resolve_dtype

        path = Path(model_dir)
        if not path.is_dir():
            raise FileNotFoundError(
                f"the executor model {model_dir} is not on this Ray node: put it at the same path on "
                "every node (a shared filesystem, or a copy)"
            )
        self.device = resolve_device(load.device)
        if self.device.type == "cpu":
            torch.set_num_threads(threads)
        extra = {} if load.attn_implementation is None else {"attn_implementation": load.attn_implementation}
        base: Any = AutoModelForCausalLM.from_pretrained(
            path, dtype=resolve_dtype(load.dtype, self.device), **extra
        )
        self.base: Any = base.to(self.device).eval()
        self.tokenizer = ExecutorTokenizer.load(path)
        self.module: Any = None  # the PeftModel, once an adapter came
        self.policy: Any = None  # a LocalModel over it, as the trainer's sampler is
        self.digest = ""

    def replay(
        self, tasks: list[Task], adapter: PolicyAdapter, settings: ReplaySettings, label: str
    ) -> list[ReplayedAttempt]:
        from runtime.executor import LocalBackend

        self._use(adapter)
        with tempfile.TemporaryDirectory(prefix="temper-ray-replay-") as scratch:
            run = Path(scratch)
            store = MemoryStore.open(run / "memory.db")
            try:
                attempts = asyncio.run(
                    replay(tasks, LocalBackend(self.policy), store, run / "snapshots", settings, label)
                )
                return [
                    ReplayedAttempt(
                        attempt,
                        store.trajectories.executor_episode(attempt.episode_id),
                        store.trajectories.calls(attempt.episode_id),
                    )
                    for attempt in attempts
                ]
            finally:
                store.close()

    def _use(self, adapter: PolicyAdapter) -> None:
        """Put `adapter` on the model, unless it is there already."""
        if adapter.digest == self.digest:
            return
        from peft import PeftModel, set_peft_model_state_dict
        from safetensors.torch import load as load_tensors

        from runtime.executor import LocalModel

        if self.module is None:
            with tempfile.TemporaryDirectory(prefix="temper-adapter-") as scratch:
                directory = Path(scratch)
                for name, content in adapter.files.items():
                    (directory / name).write_bytes(content)
                self.module = PeftModel.from_pretrained(self.base, directory).eval()
            self.policy = LocalModel(self.module, self.tokenizer, name=adapter.name, device=self.device)
        else:  # the same adapter shape, new weights: loaded in place
            set_peft_model_state_dict(self.module, load_tensors(adapter.files["adapter_model.safetensors"]))
        self.digest = adapter.digest


class RayReplay:
    """Replay workers on a Ray cluster; see the module docstring."""

    def __init__(self, workers: list[Any], settings: RaySettings) -> None:
        self.workers = workers
        self.settings = settings

    @classmethod
    def connect(cls, model_dir: Path, settings: RaySettings, load: LoadSettings | None = None) -> RayReplay:
        """Join (or start, for "local") the cluster and start `settings.workers` workers. An
        already initialised Ray (a test's, a notebook's) is used as it is."""
        try:
            import ray
        except ImportError:
            raise RayUnavailable(
                "[learner] ray_address is set but Ray is not installed: pip install 'temper[scale]'"
            ) from None
        if not ray.is_initialized():
            address = None if settings.address == "local" else settings.address
            try:
                ray.init(address=address, include_dashboard=False, log_to_driver=False)
            except ConnectionError as error:
                raise RayUnavailable(
                    f"cannot reach the Ray cluster at {settings.address!r}: {error}"
                ) from None
        actor = ray.remote(num_cpus=settings.cpus_per_worker, num_gpus=settings.gpus_per_worker)(ReplayWorker)
        load = load or LoadSettings()
        workers = [
            actor.remote(str(Path(model_dir).resolve()), load, settings.torch_threads)
            for _ in range(settings.workers)
        ]
        return cls(workers, settings)

    async def replay(
        self,
        tasks: Sequence[Task],
        policy: TrainablePolicy,
        store: MemoryStore,
        snapshot_dir: Path,
        settings: ReplaySettings,
        label: str,
    ) -> list[Attempt]:
        """learner/replay.py's `replay` with the policy's current weights, on the workers; the
        attempts in task order. `snapshot_dir` is unused: each worker keeps its own."""
        import ray

        adapter = ray.put(PolicyAdapter.of(policy))
        chunks = _chunks(list(tasks), settings.concurrent_tasks, len(self.workers))
        results: list[list[Attempt] | None] = [None] * len(chunks)
        # a chunk's future -> (its index, its worker, its Ray object ref)
        pending: dict[asyncio.Future[Any], tuple[int, Any, Any]] = {}
        waiting = list(range(len(chunks)))
        idle = list(self.workers)
        try:
            while waiting or pending:
                while waiting and idle:
                    index, worker = waiting.pop(0), idle.pop(0)
                    ref = worker.replay.remote(chunks[index], adapter, settings, label)
                    pending[asyncio.wrap_future(ref.future())] = (index, worker, ref)
                done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for future in done:  # streamed: each chunk is written as soon as it is back
                    index, worker, _ref = pending.pop(future)
                    results[index] = _write(store, future.result())
                    idle.append(worker)
        except BaseException:
            for future, (_, _, ref) in pending.items():
                future.cancel()
                ray.cancel(ref)
            raise
        return [attempt for chunk in results if chunk is not None for attempt in chunk]


def _chunks(tasks: list[Task], concurrent: int, workers: int) -> list[list[Task]]:
    """Consecutive chunks of at most `concurrent` tasks, small enough that every worker gets one."""
    size = max(1, min(concurrent, math.ceil(len(tasks) / workers)))
    return [tasks[start : start + size] for start in range(0, len(tasks), size)]


def _write(store: MemoryStore, replayed: list[ReplayedAttempt]) -> list[Attempt]:
    """Record a chunk's episodes in the trainer's store; its attempts with their new episode ids."""
    trajectories, user = store.trajectories, store.user_id(LEARNER_USER)
    attempts = []
    for item in replayed:
        episode = item.episode
        episode_id = trajectories.start_executor_episode(
            episode.task, split=episode.split or "train", group_id=episode.group_id,
            sandbox_backend=episode.sandbox_backend, snapshot_id=episode.snapshot_id,
            snapshot_bytes=episode.snapshot_bytes, verifier=episode.verifier, user_id=user,
        )  # fmt: skip
        for call in item.calls:
            values = asdict(call)
            trajectories.record_call(
                episode_id, StoredCall(**{name: values[name] for name in _STORED_FIELDS})
            )
        trajectories.finish_executor_episode(
            episode_id, episode.status,
            parse_failures=episode.parse_failures or 0, timeouts=episode.timeouts or 0,
        )  # fmt: skip
        if episode.contains_secret:
            trajectories.mark_secret(episode_id)
        if episode.reward is not None and episode.reward_source is not None:
            store.episodes.record_reward(
                episode_id, episode.reward, episode.reward_source, episode.reward_reason or ""
            )
        attempts.append(Attempt(**{**asdict(item.attempt), "episode_id": episode_id}))
    return attempts
