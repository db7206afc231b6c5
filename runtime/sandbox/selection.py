"""Choosing a backend: `open_sandbox` and `available_backends`.

`auto` picks the strongest backend that works here, docker then bwrap, and never `local`: the
unisolated backend is used only when asked for by name. An explicitly named backend that cannot
run raises `SandboxUnavailable` with what to install; nothing falls back silently.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from types import TracebackType
from typing import Any, Literal

from runtime.sandbox.base import BackendStatus, Sandbox, SandboxOptions, WorkspaceState
from runtime.sandbox.bwrap_sandbox import BwrapSandbox
from runtime.sandbox.docker_sandbox import DockerSandbox
from runtime.sandbox.errors import SandboxUnavailable
from runtime.sandbox.local_sandbox import LocalSandbox

BackendName = Literal["auto", "docker", "bwrap", "local"]
BACKENDS: dict[str, type[Sandbox]] = {
    "docker": DockerSandbox,
    "bwrap": BwrapSandbox,
    "local": LocalSandbox,
}
_AUTO_ORDER = ("docker", "bwrap")


async def available_backends(options: SandboxOptions | None = None) -> list[BackendStatus]:
    """Every backend, strongest first, with whether it works here and why (not)."""
    options = options or SandboxOptions()
    return list(await asyncio.gather(*(cls.probe(options) for cls in BACKENDS.values())))


async def choose_backend(backend: BackendName, options: SandboxOptions) -> type[Sandbox]:
    """The class for `backend`; for "auto", the first of docker, bwrap whose probe passes."""
    if backend != "auto":
        if backend not in BACKENDS:
            raise SandboxUnavailable(f"unknown sandbox backend {backend!r}: use auto, docker, bwrap or local")
        return BACKENDS[backend]
    reasons = []
    for name in _AUTO_ORDER:
        status = await BACKENDS[name].probe(options)
        if status.available:
            return BACKENDS[name]
        reasons.append(f"{name}: {status.detail}")
    raise SandboxUnavailable(
        "no isolating sandbox works here ("
        + "; ".join(reasons)
        + "). Install bubblewrap (apt-get install bubblewrap) or start Docker with the "
        "temper-sandbox image; or, knowing it gives no isolation, choose backend 'local'."
    )


async def _open(backend: BackendName, workspace: WorkspaceState, options: SandboxOptions) -> Sandbox:
    sandbox = (await choose_backend(backend, options))(options)
    await sandbox.start(workspace)
    return sandbox


class SandboxOpening:
    """What `open_sandbox` returns: await it for a started sandbox, or `async with` it to also
    have it stopped at the end of the block."""

    def __init__(self, backend: BackendName, workspace: WorkspaceState, options: SandboxOptions) -> None:
        self._args = (backend, workspace, options)
        self._sandbox: Sandbox | None = None

    def __await__(self) -> Generator[Any, None, Sandbox]:
        return _open(*self._args).__await__()

    async def __aenter__(self) -> Sandbox:
        self._sandbox = await _open(*self._args)
        return self._sandbox

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._sandbox is not None:
            await self._sandbox.stop()


def open_sandbox(
    backend: BackendName = "auto",
    *,
    workspace: WorkspaceState = None,
    options: SandboxOptions | None = None,
) -> SandboxOpening:
    """A sandbox of `backend` started from `workspace` (a Snapshot, a host directory, or empty).

    `async with open_sandbox("auto", workspace=snapshot) as sandbox: ...`
    """
    return SandboxOpening(backend, workspace, options or SandboxOptions())
