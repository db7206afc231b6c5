"""Activation: making an executor backend sample with a given adapter version.

    await activate(version, backend)   # LocalBackend (PEFT in process) or OpenAIBackend (HTTP)
    await sync(versions, backend)      # activate whatever `current` points at, if not active yet

Any `AdapterHost` will do (runtime/executor/adapter_host.py). The steps, the same in process and
over HTTP (`temper serve executor`, vLLM's runtime LoRA endpoints):

1. If the version is already loaded (a rollback soon after a promotion), switch to it.
2. Else load it under its version name; it is used from the next call on.
3. Unload the adapter that was active before.

A new version is always loaded under a new name, so nothing is ever reloaded in place (vLLM
mishandles that: FACTS.md's "unload then load"). Loading before unloading means calls never
fall back to the base model in between, and a failed load leaves the old version active.
"""

from __future__ import annotations

from learner.versions import ExecutorVersions, Version
from runtime.executor import AdapterHost, ExecutorRequestError


async def activate(version: Version, host: AdapterHost) -> None:
    """Make `host` sample with `version` from its next call on (the steps above)."""
    previous = host.adapter_version
    if previous == version.name:
        return
    try:
        await host.use_adapter(version.name)
    except ExecutorRequestError as error:
        if error.status != 404:  # 404: not loaded there, as both backends say it
            raise
        await host.load_adapter(version.name, version.directory)
    if previous is not None:
        await host.unload_adapter(previous)


async def sync(versions: ExecutorVersions, host: AdapterHost) -> Version | None:
    """Activate the current version unless the host already uses it; for a long-running process
    (the daemon) to call at start and after a rollback. Returns the current version, if any."""
    version = versions.current()
    if version is not None:
        await activate(version, host)
    return version
