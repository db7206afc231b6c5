"""`AdapterHost`: a backend whose model takes LoRA adapters at run time, by version.

Both `LocalBackend` (PEFT, in process) and `OpenAIBackend` (vLLM's runtime LoRA endpoints, or
`temper serve executor`) are adapter hosts. The learner promotes a new executor with

    await backend.load_adapter("v7", directory)   # loaded and used from the next call on
    await backend.use_adapter("v6")               # rollback: any loaded version, or None (base)
    await backend.unload_adapter("v6")            # the active one falls back to the base model

Invariant: `adapter_version` is the version the next `complete` samples with, and every
`Completion` records the version that actually sampled it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class AdapterHost(Protocol):
    @property
    def adapter_version(self) -> str | None: ...

    async def load_adapter(self, version: str, directory: str | Path) -> None: ...

    async def use_adapter(self, version: str | None) -> None: ...

    async def unload_adapter(self, version: str) -> None: ...
