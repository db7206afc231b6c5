"""Fixtures for the sandbox tests: `sandbox_backend` is every backend, skipped with its probe's
reason where it cannot run here, failed instead under CI (tests/sandbox_backends.py; docker needs
DOCKER_HOST pointing at a live engine with the temper-sandbox image: `eval "$(.ci/docker-up)"`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import cast

import pytest

from memory import MemoryStore
from runtime.sandbox import (
    BackendName,
    BackendStatus,
    Limits,
    Sandbox,
    SandboxOptions,
    open_sandbox,
)
from tests.fakes.openai_server import FakeOpenAI
from tests.sandbox_backends import require

TEST_OPTIONS = SandboxOptions(
    limits=Limits(memory_bytes=256 << 20, pids=64, cpu_seconds=30, file_size_bytes=64 << 20),
    max_output_bytes=4096,
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "escape(kind): a sandbox escape attempt of this kind")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def sandbox_options() -> SandboxOptions:
    """Small limits, so that bombs hit them quickly, and a 4 KiB output bound."""
    return TEST_OPTIONS


@pytest.fixture(params=["docker", "bwrap", "local"])
def sandbox_backend(
    request: pytest.FixtureRequest, sandbox_statuses: dict[str, BackendStatus]
) -> BackendName:
    require(sandbox_statuses[request.param])
    return cast(BackendName, request.param)


@pytest.fixture
async def sandbox(sandbox_backend: BackendName, sandbox_options: SandboxOptions) -> AsyncIterator[Sandbox]:
    async with open_sandbox(sandbox_backend, options=sandbox_options) as started:
        yield started


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """The fake OpenAI-compatible server on 127.0.0.1: one `enqueue` per model call."""
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    """A real memory database in a temporary directory."""
    with MemoryStore.open(tmp_path / "memory.db") as opened:
        yield opened
