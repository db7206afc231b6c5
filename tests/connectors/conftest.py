"""Fixtures the connector tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """The fake OpenAI-compatible model server, answering what a test enqueues."""
    with FakeOpenAI() as fake:
        yield fake
