from collections.abc import Iterator
from pathlib import Path

import pytest

from memory import MemoryStore, ranking
from tests.sandbox_backends import in_ci


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    with MemoryStore.open(tmp_path / "memory.db") as opened:
        yield opened


@pytest.fixture
def native_built() -> None:
    """For tests of the C functions: they fail in CI where the library was not built (pip
    install builds it), and are skipped elsewhere."""
    if not ranking.NATIVE:
        message = "memory._fts5_rank was not built (pip install -e . with a C compiler builds it)"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
