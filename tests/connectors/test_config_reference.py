"""connectors.config.reference: docs/configuration.md is the rendering of the schema, and it
documents every key of `Config` with the environment variable that really sets it.

The keys are found here by walking the pydantic models on their own, not through the renderer,
so a key the renderer skipped fails the test instead of vanishing from both.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from connectors.config import SECRET_KEYS, Config
from connectors.config.loading import environment_layers
from connectors.config.reference import DOCS_PATH, REGENERATE, main, render

ROOT = Path(__file__).resolve().parents[2]


def leaf_keys(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from leaf_keys(annotation, (*prefix, name))
        else:
            yield (*prefix, name)


LEAVES = list(leaf_keys(Config))


def row_of(page: str, key: tuple[str, ...]) -> str:
    rows = [line for line in page.splitlines() if line.startswith(f"| `{'.'.join(key)}` |")]
    assert len(rows) == 1, f"{'.'.join(key)}: {len(rows)} rows in docs/configuration.md, expected 1"
    return rows[0]


def test_the_page_is_where_the_docs_are() -> None:
    assert DOCS_PATH == ROOT / "docs" / "configuration.md"


def test_docs_configuration_md_is_the_rendering_of_the_schema() -> None:
    written = DOCS_PATH.read_text(encoding="utf-8") if DOCS_PATH.exists() else ""

    assert written == render(), (
        "docs/configuration.md differs from the config schema (connectors/config/schema.py); "
        f"regenerate it with `{REGENERATE}` and commit the result"
    )


def test_the_walk_finds_keys_of_every_table() -> None:
    assert ("data_dir",) in LEAVES
    assert ("models", "judge", "temperature") in LEAVES
    assert ("daemon", "learner_schedule") in LEAVES
    assert len(LEAVES) > 40


@pytest.mark.parametrize("key", LEAVES, ids=".".join)
def test_every_key_has_a_row_with_its_variable(key: tuple[str, ...]) -> None:
    row = row_of(render(), key)
    variable = "TEMPER_" + "__".join(key).upper()

    assert f"`{variable}`" in row
    # and that variable sets exactly this key (connectors/config/loading.py reads it)
    (layer,) = environment_layers({variable: "1"})
    data: Any = layer.data
    for part in key:
        assert isinstance(data, dict) and list(data) == [part], f"{variable} sets {layer.data}"
        data = data[part]


def test_secrets_have_no_default_and_their_description() -> None:
    page = render()
    secrets = [key for key in LEAVES if key[-1] in SECRET_KEYS]

    assert {key[-1] for key in secrets} == SECRET_KEYS
    for key in secrets:
        cells = [cell.strip() for cell in row_of(page, key).split(" | ")]
        assert cells[1:4] == ["secret", "not set", "a secret string, set in secrets.toml or the environment"]


def test_slot_defaults_are_the_slots_own() -> None:
    page = render()

    assert "| `0.0` |" in row_of(page, ("models", "judge", "temperature"))
    assert "| `0.7` |" in row_of(page, ("models", "planner", "temperature"))
    assert "| `1024` |" in row_of(page, ("models", "judge", "max_tokens"))


def test_the_page_does_not_depend_on_the_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    before = render()
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("HOME", str(tmp_path))

    assert render() == before
    assert str(tmp_path) not in before


def test_main_prints_the_page_or_writes_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    assert capsys.readouterr().out == render()

    target = tmp_path / "configuration.md"
    assert main(["--write", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == render()
