"""Choosing a backend: auto picks the strongest that works, never local; names are honoured or
refused with what to install; `available_backends` reports all three for `temper doctor`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from runtime.sandbox import (
    BackendStatus,
    LocalSandbox,
    SandboxOptions,
    SandboxUnavailable,
    available_backends,
    open_sandbox,
)
from tests.sandbox_backends import require

pytestmark = pytest.mark.anyio


async def test_available_backends_lists_all_three_strongest_first() -> None:
    statuses = await available_backends()
    assert [status.name for status in statuses] == ["docker", "bwrap", "local"]
    assert all(status.detail for status in statuses)


async def test_auto_picks_the_strongest_available(
    sandbox_statuses: dict[str, BackendStatus], require_sandbox: Callable[[str], None]
) -> None:
    expected = next((n for n in ("docker", "bwrap") if sandbox_statuses[n].available), None)
    if expected is None:
        require_sandbox("bwrap")  # neither works: skip, saying why (fail in CI)
    async with open_sandbox("auto") as sandbox:
        assert sandbox.name == expected
        assert sandbox.warning is None
        assert (await sandbox.run("echo ok", timeout_s=10)).output == "ok\n"


async def test_auto_refuses_to_fall_back_to_local(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on PATH
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(SandboxUnavailable) as raised:
        await open_sandbox("auto")
    message = str(raised.value)
    assert "apt-get install bubblewrap" in message and "'local'" in message
    assert "docker engine not reachable" in message


async def test_a_named_backend_that_cannot_run_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(SandboxUnavailable, match="not reachable"):
        await open_sandbox("docker")


async def test_a_missing_image_says_how_to_build_it(require_sandbox: Callable[[str], None]) -> None:
    require_sandbox("docker")
    options = SandboxOptions(docker_image="temper-no-such-image:0")
    with pytest.raises(SandboxUnavailable, match="docker-up"):
        await open_sandbox("docker", options=options)


async def test_an_unknown_backend_is_refused() -> None:
    with pytest.raises(SandboxUnavailable, match="auto, docker, bwrap or local"):
        await open_sandbox("chroot")  # type: ignore[arg-type]


async def test_local_is_opt_in_and_carries_a_warning() -> None:
    async with open_sandbox("local") as sandbox:
        assert isinstance(sandbox, LocalSandbox)
        assert sandbox.warning and "NO isolation" in sandbox.warning
    assert "no isolation" in next(s for s in await available_backends() if s.name == "local").detail


@pytest.mark.parametrize(("ci", "outcome"), [("", pytest.skip.Exception), ("true", pytest.fail.Exception)])
def test_an_unavailable_backend_skips_locally_and_fails_in_ci(
    monkeypatch: pytest.MonkeyPatch, ci: str, outcome: type[BaseException]
) -> None:
    monkeypatch.setenv("CI", ci)
    missing = BackendStatus("bwrap", False, "bwrap not found: install bubblewrap")
    with pytest.raises(outcome, match="bwrap sandbox unavailable: bwrap not found"):
        require(missing)
    require(BackendStatus("bwrap", True, "namespaces"))  # an available one neither skips nor fails
