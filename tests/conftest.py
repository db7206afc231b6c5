"""Fixtures every test folder may use: the sandbox backends' probes; `require_sandbox`, which
skips a test whose backend cannot run here, or fails it under CI (tests/sandbox_backends.py);
and `isolating_backend`, the quickest isolating backend for tests of what runs in a sandbox."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import pytest

from runtime.sandbox import BackendName, BackendStatus, available_backends
from tests.sandbox_backends import require


@pytest.fixture(scope="session")
def sandbox_statuses() -> dict[str, BackendStatus]:
    """Each backend's probe, once per session: whether it works here, and why not."""
    return {status.name: status for status in asyncio.run(available_backends())}


@pytest.fixture
def require_sandbox(sandbox_statuses: dict[str, BackendStatus]) -> Callable[[str], None]:
    """`require_sandbox("bwrap")`: go on if bwrap works here; else skip, or fail under CI."""
    return lambda name: require(sandbox_statuses[name])


@pytest.fixture
def isolating_backend(sandbox_statuses: dict[str, BackendStatus]) -> BackendName:
    """The quickest isolating backend that works here (bwrap, else docker), for tests of what runs
    in a sandbox rather than of the sandbox; skipped (failed under CI) when neither works."""
    for name in ("bwrap", "docker"):
        if sandbox_statuses[name].available:
            return cast(BackendName, name)
    require(sandbox_statuses["bwrap"])
    raise AssertionError("unreachable: require() skips or fails")


@pytest.fixture
def temp_root(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A system temp dir of the test's own (tempfile's, and a worker's TMPDIR when the test
    passes it on), reachable by nobody as sandboxes need when tests run as root: a test can
    count what is left in it."""
    root = Path(tempfile.mkdtemp(prefix="temper-test-tmp-"))
    root.chmod(0o711)
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    yield root
    shutil.rmtree(root)
