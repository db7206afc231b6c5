"""The configuration reference, docs/configuration.md, rendered from the settings' models.

    python -m connectors.config.reference                # print it
    python -m connectors.config.reference --write        # rewrite docs/configuration.md
    python -m connectors.config.reference --write PATH   # write it elsewhere

Every key of ``Config`` gets one row: its dotted name, its type, its default, what a right value
looks like (the field's ``description``, the text error messages quote) and the environment
variable that sets it. The defaults are those of the models, slot defaults included (the judge's
temperature is 0.0), read from a section built empty, as a config file without that section
gets it. Only the introduction (``INTRO``) and the page that explains each table
(``TABLE_PAGES``) are written by hand; tests/connectors/test_config_reference.py fails when
docs/configuration.md differs from ``render()``, so the page cannot drift from the schema.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
import typing
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from connectors.config.loading import ENV_PREFIX
from connectors.config.schema import SECRET_KEYS, Config, default_data_dir

DOCS_PATH = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
REGENERATE = "python -m connectors.config.reference --write"

# Defaults that depend on the machine are described, not computed: the page is the same everywhere.
FACTORY_DEFAULTS: dict[Callable[[], object], str] = {
    default_data_dir: "the user data directory: `~/.local/share/temper` on Linux "
    "(`$XDG_DATA_HOME/temper` when that is set)",
}

# The docs page (relative to docs/) that explains each table's keys in context, and its title.
TABLE_PAGES: dict[str, tuple[str, str]] = {
    "": ("Where temper keeps things", "index.md#where-temper-keeps-things"),
    "memory": ("Memory", "memory.md"),
    "models.planner": ("The agent: models", "agent.md#models"),
    "models.executor": ("The executor: backends", "executor.md#backends"),
    "models.judge": ("The agent: models", "agent.md#models"),
    "sandbox": ("Security: sandboxes", "security.md#sandboxes"),
    "executor": ("The executor", "executor.md"),
    "learner": ("The learner", "learner.md"),
    "telegram": ("The daemon: setting up a Telegram bot", "daemon.md#setting-up-a-telegram-bot"),
    "slack": ("The daemon: setting up a Slack app", "daemon.md#setting-up-a-slack-app"),
    "daemon": ("The daemon", "daemon.md"),
    "users": ("Users", "users.md"),
    "skills": ("Skills", "skills.md"),
}

INTRO = """\
All of temper's settings live in one TOML file. Every key is optional: a key left out has the
default below. `temper init` writes `config.toml` with every key at its default and a comment
on what it does, a private `secrets.toml` beside it, and the data directory (it never replaces
an existing config without `--force`, and then keeps the old one as `.bak`). `temper doctor`
checks what the config describes, one line per check (ok, warn or fail): the config, the data
dir, the database, API keys (masked), sandbox backends (a Docker engine ping, a trial `bwrap`
run), model endpoints (`GET {api_base}/models`) and optional extras; it exits 1 only when
something required fails.

## Where settings come from

Later layers win, key by key:

1. the defaults (the tables below);
2. `config.toml`: `--config PATH`, else `$TEMPER_CONFIG`, else `config.toml` in the user config
   directory (`~/.config/temper/config.toml` on Linux). A missing default file means all
   defaults; a file named with `--config` or `$TEMPER_CONFIG` must exist;
3. `secrets.toml` beside it (or `--secrets PATH` / `$TEMPER_SECRETS`): secret keys only;
4. for each model slot, the environment variable its `api_key_env` names (default
   `OPENAI_API_KEY`), as that slot's `api_key`;
5. environment variables `TEMPER_<SECTION>__<KEY>`, with a double underscore between the parts
   of the key's dotted name (`TEMPER_MODELS__PLANNER__MODEL=ollama/qwen3:8b`,
   `TEMPER_SANDBOX__NETWORK=true`, `TEMPER_MEMORY__DB_PATH=/srv/temper.db`), and `TEMPER_DATA_DIR`.
   A value is read as TOML when it parses as one (numbers, `true`, `["a", "b"]`), as text
   otherwise. A name with `__` must name a real key; other `TEMPER_*` names belong to tools
   and scripts and are ignored (`TEMPER_CONFIG`, `TEMPER_SECRETS`).

## Secrets

The secret keys (`api_key`, `bot_token`, `app_token`, `signing_secret`, `secret_token`) never go
in `config.toml`: temper refuses them there and says where to move them. Put them in
`secrets.toml`, which must be private (`chmod 600`; temper refuses to read it while group or
others have any permission on it), or in the environment. Secrets are only ever shown masked,
as their kind and at most their last four characters (`sk-…abcd`). More in
[Security](security.md#secrets).

## Mistakes

A bad value is an error that names the key, the value given, what would be right (the
"a right value" column below) and the file or variable that set it:

```
models.planner.temperature: must be a number between 0 and 2, got 'hot' (set in /home/ana/.config/temper/config.toml)
unknown key 'memroy' (did you mean 'memory'?) (set in /home/ana/.config/temper/config.toml)
```

A key temper no longer has is refused with the reason it went, unless it holds what is now simply
how temper works: `[memory] search_scope = "user"`, which older `temper init`s wrote, still loads
(memory search is always the asking user's own; `"all"` is refused).
"""


@dataclass(frozen=True)
class Key:
    """One leaf of the config: a row of the reference."""

    path: tuple[str, ...]
    type: str
    default: str
    description: str

    @property
    def dotted(self) -> str:
        return ".".join(self.path)

    @property
    def environment(self) -> str:
        return ENV_PREFIX + "__".join(self.path).upper()


@dataclass(frozen=True)
class Table:
    """The keys of one TOML table (``path`` empty: the top level)."""

    path: tuple[str, ...]
    doc: str
    keys: list[Key]

    @property
    def dotted(self) -> str:
        return ".".join(self.path)


def tables(root: type[BaseModel] = Config) -> list[Table]:
    """Every table that holds keys, in the order of the models' fields, top level first."""
    return list(_tables(root, None, ()))


def _tables(model: type[BaseModel], defaults: BaseModel | None, path: tuple[str, ...]) -> Iterator[Table]:
    keys: list[Key] = []
    below: list[tuple[type[BaseModel], BaseModel, tuple[str, ...]]] = []
    for name, field in model.model_fields.items():
        section = _as_model(field.annotation)
        if section is not None:
            below.append((section, _default(field, name, defaults), (*path, name)))
        else:
            keys.append(_key(field, (*path, name), defaults))
    if keys:
        yield Table(path, _doc(model), keys)
    for section, value, sub_path in below:
        yield from _tables(section, value, sub_path)


def _key(field: FieldInfo, path: tuple[str, ...], defaults: BaseModel | None) -> Key:
    if field.default_factory in FACTORY_DEFAULTS:
        default = FACTORY_DEFAULTS[field.default_factory]
    elif path[-1] in SECRET_KEYS:
        default = "not set"
    else:
        value = _default(field, path[-1], defaults)
        default = "not set" if value is None else f"`{_toml(value)}`"
    return Key(path, _type_name(field.annotation), default, field.description or "")


def _default(field: FieldInfo, name: str, parent: BaseModel | None) -> Any:
    """What the parent table, built empty, holds under ``name`` (so slot defaults count); at the
    top level, whose validator makes paths absolute, the field's own default."""
    return getattr(parent, name) if parent is not None else field.get_default(call_default_factory=True)


def _doc(model: type[BaseModel]) -> str:
    """The model's own docstring (not one inherited), joined into one paragraph."""
    doc = model.__dict__.get("__doc__") or ""
    return " ".join(doc.split())


def _as_model(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _type_name(annotation: Any) -> str:
    if typing.get_origin(annotation) is Annotated:
        return _type_name(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return " or ".join(_type_name(member) for member in members)
    if typing.get_origin(annotation) is list:
        (item,) = typing.get_args(annotation)
        return f"list of {_type_name(item)}s"
    if typing.get_origin(annotation) is Literal:
        return "string"
    names = {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        Path: "path",
        SecretStr: "secret",
    }
    if annotation in names:
        return names[annotation]
    raise TypeError(f"no reference name for the type {annotation!r}: add it to _type_name")


def _toml(value: object) -> str:
    """A default written as it would be in config.toml."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str | Path):
        return json.dumps(str(value))
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    raise TypeError(f"no TOML form for the default {value!r}: add it to _toml")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _render_table(table: Table) -> list[str]:
    dotted = table.dotted
    if dotted not in TABLE_PAGES:
        raise KeyError(f"the table [{dotted}] has no page: add it to TABLE_PAGES in {__name__}")
    heading = f"### `[{dotted}]`" if dotted else "### Top level"
    lines = [heading, ""]
    if table.doc:
        lines += [table.doc, ""]
    title, page = TABLE_PAGES[dotted]
    lines += [
        f"Explained in [{title}]({page}).",
        "",
        "| key | type | default | a right value | environment variable |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| `{key.dotted}` | {key.type} | {_cell(key.default)} | {_cell(key.description)} | `{key.environment}` |"
        for key in table.keys
    ]
    return [*lines, ""]


def render() -> str:
    """docs/configuration.md, exactly."""
    lines = [
        "# Configuration",
        "",
        f"<!-- Generated from connectors/config/schema.py by `{REGENERATE}`; edit the schema"
        " (or the introduction in connectors/config/reference.py), not this file. -->",
        "",
        INTRO,
        "## Every key",
        "",
        "Each table below is a TOML table of `config.toml` (the top-level keys come before the first"
        " table). Secrets show no default: they are not set until you set them.",
        "",
    ]
    for table in tables():
        lines += _render_table(table)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m connectors.config.reference", description="Render the configuration reference."
    )
    parser.add_argument(
        "--write",
        nargs="?",
        const=DOCS_PATH,
        type=Path,
        metavar="PATH",
        help="write it to PATH (default: docs/configuration.md) instead of printing it",
    )
    args = parser.parse_args(argv)
    text = render()
    if args.write is None:
        sys.stdout.write(text)
    else:
        args.write.write_text(text, encoding="utf-8")
        print(f"wrote {args.write}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
