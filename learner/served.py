"""Training an executor that a server samples (vLLM, `temper serve executor`): the policy being
trained, as the server serves it.

    settings = ServedSampler("http://127.0.0.1:8000/v1", "executor", adapter_dir=versions_dir / ".learning")
    async with ServedPolicy(settings, model_dir) as served:
        current = await served.adapter(start_adapter)     # the version in service, for the gate
        policy = await served.sync(trainer)               # the trainer's adapter, as the server samples it
        ...  replay(tasks, policy, ...)                   # episodes with the server's ids and logprobs

The trainer holds the base weights locally (`[executor] model_dir`: the served model's own
directory) and trains the LoRA adapter; before each replay, `sync` writes the adapter as it
stands into `adapter_dir` and loads it into the server over its runtime LoRA endpoints under a
new name, unloading the step before's once replays moved on: the server samples the policy being
trained, and the rows carry exactly what it sampled (its token ids, its logprobs as the
sampler's; learner/mismatch.py measures and corrects how far those are from the trainer's).

Invariants:
- Every name this loads is its own (`learn-<nonce>-...`, never a version's name) and is
  unloaded when the cycle ends, so the server's daemon-facing names (`v3`, ...) and the runs
  on them are never touched: promotion is the daemon's switch (runtime/executor/switch.py
  `ModelSwitch`, through connectors/assembly.py `follow_current_version`).
- A name is never reloaded in place (vLLM mishandles that): each sync loads a new one.
- `adapter_dir` must be a directory the server loads adapters from (`temper serve executor`:
  inside its adapter root, by default `<data_dir>/executor/versions`; vLLM: a path on its
  machine), so the learner and the server share a filesystem.
"""

from __future__ import annotations

import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

from runtime.executor import OpenAIBackend

if TYPE_CHECKING:
    from learner.train import GRPOTrainer


@dataclass(frozen=True)
class ServedSampler:
    """Where the executor is served: an OpenAI-compatible server at `base_url` (ending in /v1)
    serving the base model as `model`, loading adapters from `adapter_dir`."""

    base_url: str
    model: str
    adapter_dir: Path
    api_key: str | None = field(default=None, repr=False)


class ServedPolicy:
    """See the module docstring. Close it (`async with`) to unload what it loaded."""

    def __init__(self, settings: ServedSampler, model_dir: Path) -> None:
        self.settings = settings
        self.backend = OpenAIBackend(
            settings.base_url, settings.model, api_key=settings.api_key, tokenizer_dir=model_dir
        )
        self._prefix = f"learn-{secrets.token_hex(3)}"
        self._staging = settings.adapter_dir / self._prefix
        self._loaded: list[str] = []  # names this loaded and has not unloaded, oldest first
        self._synced: tuple[int, str] | None = None  # (trainer step, name) of the last sync

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Unload every adapter this loaded, remove their files, close the connection."""
        try:
            for name in list(self._loaded):
                await self._unload(name)
        finally:
            shutil.rmtree(self._staging, ignore_errors=True)
            await self.backend.aclose()

    @property
    def loaded(self) -> list[str]:
        return list(self._loaded)

    async def adapter(self, directory: Path | None) -> OpenAIBackend:
        """The backend sampling with the adapter in `directory` (a version's, which the server
        loads for the daemon too) under a name of its own, or the base model for None."""
        if directory is None:
            return self.backend.pinned(None)
        return await self._load(self._name("current"), directory)

    async def sync(self, trainer: GRPOTrainer) -> OpenAIBackend:
        """The backend sampling with the trainer's adapter as it stands now: written and loaded
        under a new name unless this step is already loaded; the previous step's is unloaded."""
        step = trainer.step_count
        if self._synced is not None and self._synced[0] == step:
            return self.backend.pinned(self._synced[1])
        name = self._name(f"step{step}")
        pinned = await self._load(name, trainer.save_adapter(self._staging / name))
        previous, self._synced = self._synced, (step, name)
        if previous is not None:  # the replays on it are over: sync is called between them
            await self._unload(previous[1])
        return pinned

    def _name(self, what: str) -> str:
        return f"{self._prefix}-{what}-{secrets.token_hex(2)}"

    async def _load(self, name: str, directory: Path) -> OpenAIBackend:
        await self.backend.load_adapter(name, directory.resolve())
        self._loaded.append(name)
        return self.backend.pinned(name)

    async def _unload(self, name: str) -> None:
        await self.backend.unload_adapter(name)
        self._loaded.remove(name)
        shutil.rmtree(self._staging / name, ignore_errors=True)
