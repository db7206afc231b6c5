from collections.abc import Iterator
from pathlib import Path

import pytest

from memory import MemoryStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    with MemoryStore.open(tmp_path / "memory.db") as opened:
        yield opened
