"""`ModelSwitch`: the executor model's adapter version, changed while the agent runs.

    switch = ModelSwitch(backend)                   # a LocalBackend or an OpenAIBackend
    async with switch.pinned() as (model, version):  # one executor run: every call on `version`
        await model.complete(messages, sampling)
    await switch.activate("v7", "/data/executor/versions/v7")   # next runs sample with v7
    await switch.activate(None)                                  # the base model

Activation, the same in process (PEFT) and over HTTP (`temper serve executor`, vLLM's runtime
LoRA endpoints):

1. If the version is already loaded (a rollback soon after a promotion), switch to it.
2. Else load it under its version name; new runs use it from then on.
3. Unload the adapter that was active before, once no run pinned to it is still going.

Invariants:
- A run started on a version finishes on it: `pinned()` hands the run a view of the backend whose
  adapter is fixed (`backend.pinned(version)`), and an adapter is never unloaded while a run
  pinned to it is in flight (its unload waits for the last such run to end).
- A version is always loaded under a new name, never reloaded in place (FACTS.md: vLLM mishandles
  that); loading before unloading means runs never fall back to the base model in between, and a
  failed load leaves the old version serving.
- Activations are serialised (one lock). This is the one way a version reaches a running
  backend: the daemon, `temper executor rollback` and the tests all go through it.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol, Self

from runtime.executor.completion import ExecutorBackend
from runtime.executor.errors import ExecutorRequestError


class SwitchableBackend(ExecutorBackend, Protocol):
    """An executor backend that takes adapters at run time (an `AdapterHost`) and can hand out a
    view of itself with a fixed adapter: `LocalBackend` and `OpenAIBackend`."""

    @property
    def adapter_version(self) -> str | None: ...

    async def load_adapter(self, version: str, directory: str | Path) -> None: ...

    async def use_adapter(self, version: str | None) -> None: ...

    async def unload_adapter(self, version: str) -> None: ...

    def pinned(self, version: str | None) -> Self: ...


class ModelSwitch:
    """See the module docstring. `version` is what new runs get; None is the base model."""

    def __init__(self, backend: SwitchableBackend) -> None:
        self.backend = backend
        self._runs: Counter[str | None] = Counter()  # runs in flight per version
        self._retired: set[str] = set()  # replaced versions to unload once their runs end
        self._lock = asyncio.Lock()

    @property
    def version(self) -> str | None:
        return self.backend.adapter_version

    def runs_on(self, version: str | None) -> int:
        """How many runs pinned to `version` are in flight."""
        return self._runs[version]

    @asynccontextmanager
    async def pinned(self) -> AsyncIterator[tuple[ExecutorBackend, str | None]]:
        """The backend fixed on the serving version, for one run, and that version."""
        version = self.backend.adapter_version
        self._runs[version] += 1
        try:
            yield self.backend.pinned(version), version
        finally:
            self._runs[version] -= 1
            if self._runs[version] <= 0:
                del self._runs[version]
                if version in self._retired:
                    async with self._lock:
                        await self._unload_if_idle(version)

    async def activate(self, version: str | None, directory: str | Path | None = None) -> bool:
        """Serve `version` (loaded from `directory` if not loaded yet) from the next run on; the
        previous one is unloaded once its runs end. False when it already served."""
        async with self._lock:
            previous = self.backend.adapter_version
            if previous == version:
                return False
            if version is None:
                await self.backend.use_adapter(None)
            else:
                self._retired.discard(version)  # back in service before its unload came
                try:
                    await self.backend.use_adapter(version)
                except ExecutorRequestError as error:
                    if error.status != 404 or directory is None:  # 404: not loaded, as both backends say
                        raise
                    await self.backend.load_adapter(version, directory)
            if previous is not None:
                self._retired.add(previous)
                await self._unload_if_idle(previous)
            return True

    async def _unload_if_idle(self, version: str) -> None:
        if self._runs[version] or version not in self._retired or version == self.backend.adapter_version:
            return
        self._retired.discard(version)
        await self.backend.unload_adapter(version)
