"""temper's configuration: one TOML file, one secrets file and ``TEMPER_*`` environment variables.

Layers, later wins:

1. the defaults in the pydantic models (schema.py);
2. ``config.toml``: ``--config PATH``, else ``$TEMPER_CONFIG``, else platformdirs'
   ``user_config_dir("temper")/config.toml`` (a missing default file means "all defaults");
3. ``secrets.toml`` next to it (or ``--secrets PATH`` / ``$TEMPER_SECRETS``): secret keys only,
   refused while group or others have any permission on it;
4. for each model slot, the environment variable its ``api_key_env`` names (its ``api_key``);
5. ``TEMPER_<SECTION>__<KEY>`` variables (``TEMPER_MODELS__PLANNER__MODEL``) and
   ``TEMPER_DATA_DIR``, read as TOML values when they parse as one (``0.2``, ``true``,
   ``["a", "b"]``), as text otherwise. A name with ``__`` must name a real key; other
   ``TEMPER_*`` names that are not top-level keys belong to tools and scripts and are ignored
   (``TEMPER_CONFIG``, ``TEMPER_SECRETS``, ``TEMPER_DOCKER_DIR``).

Invariants: secrets (``SECRET_KEYS``) are held as ``SecretStr``, refused in config.toml, and never
shown in full by a repr, an error or ``temper doctor`` (``mask`` shows at most the last four
characters). Every problem is a ``ConfigError`` whose lines each say which key is wrong, what was
given, what would be right, and which file or variable set it. A key temper no longer has
(``RETIRED_KEYS``) is dropped when it holds what is now simply how temper works, and is a problem
saying why it went otherwise.
"""

from __future__ import annotations

import os
import stat
import tomllib
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platformdirs import user_config_dir
from pydantic import SecretStr, ValidationError
from pydantic.fields import FieldInfo

from connectors.config.messages import describe, dotted, field_at, suggest
from connectors.config.schema import (
    APP_NAME,
    SECRET_KEYS,
    SLOTS,
    Config,
    ConfigError,
    ModelSlot,
    default_data_dir,
)
from connectors.config.template import DEFAULT_CONFIG_TEMPLATE, DEFAULT_SECRETS_TEMPLATE
from memory import mask

ENV_PREFIX = "TEMPER_"
CONFIG_PATH_ENV = "TEMPER_CONFIG"
SECRETS_PATH_ENV = "TEMPER_SECRETS"
# Keys temper no longer has, with the value that is now simply how temper works, and why they
# went. A config that still sets one to that value loads as before (`temper init` wrote
# `search_scope = "user"`); any other value is a problem, never a setting silently ignored.
RETIRED_KEYS: dict[tuple[str, ...], tuple[object, str]] = {
    ("memory", "search_scope"): (
        "user",
        "the agent's memory search is always the asking user's own, so one person's "
        "conversations never reach another's prompt (`temper memory search` without --user is "
        "the operator's search across everyone); delete the line",
    ),
}
# Shown masked in error messages: secrets, and api_key_env, where a pasted key is a common mistake.
MASKED_IN_ERRORS = SECRET_KEYS | {"api_key_env"}


@dataclass(frozen=True)
class Layer:
    """Settings from one source; ``origin`` is how errors name it ("set in ...", "set by ...")."""

    origin: str
    data: dict[str, Any]


def resolve_config_path(path: Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """The config file that ``load_config`` reads: ``path``, ``$TEMPER_CONFIG`` or the default."""
    env = os.environ if environ is None else environ
    if path is not None:
        return path.expanduser()
    if env.get(CONFIG_PATH_ENV):
        return Path(env[CONFIG_PATH_ENV]).expanduser()
    return Path(user_config_dir(APP_NAME)) / "config.toml"


def resolve_secrets_path(secrets_path: Path | None, config_path: Path, environ: Mapping[str, str]) -> Path:
    """The secrets file: ``secrets_path``, ``$TEMPER_SECRETS`` or secrets.toml beside the config."""
    if secrets_path is not None:
        return secrets_path.expanduser()
    if environ.get(SECRETS_PATH_ENV):
        return Path(environ[SECRETS_PATH_ENV]).expanduser()
    return config_path.parent / "secrets.toml"


def load_config(
    path: Path | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    secrets_path: Path | None = None,
) -> Config:
    """Read, merge and validate every layer; raise ``ConfigError`` listing every problem found.

    A config or secrets file named explicitly (argument or variable) must exist; the default
    ones may be absent.
    """
    env = os.environ if environ is None else environ
    config_file = resolve_config_path(path, env)
    config_data = _read_toml(config_file, required=path is not None or bool(env.get(CONFIG_PATH_ENV)))
    _refuse_secrets_in_config(config_data, config_file)

    secrets_file = resolve_secrets_path(secrets_path, config_file, env)
    secrets_data = _read_secrets(
        secrets_file, required=secrets_path is not None or bool(env.get(SECRETS_PATH_ENV))
    )

    file_layers = [
        Layer(f"set in {config_file}", config_data),
        Layer(f"set in {secrets_file}", secrets_data),
    ]
    env_layers = environment_layers(env)
    layers = [*file_layers, *_api_key_layers([*file_layers, *env_layers], env), *env_layers]
    merged, sources = _merge(layers)
    problems = _drop_retired_keys(merged, sources)
    try:
        config = Config.model_validate(merged)
    except ValidationError as exc:
        # `from None`: the pydantic error quotes inputs in full, secrets included.
        problems += [describe(error, Config, sources, MASKED_IN_ERRORS) for error in exc.errors()]
        raise ConfigError(problems) from None
    problems += _unmet_requirements(config, sources)
    if problems:
        raise ConfigError(problems)
    return config


def _drop_retired_keys(merged: dict[str, Any], sources: Mapping[tuple[str, ...], str]) -> list[str]:
    """Take the retired keys out of ``merged``; a problem for each one set to anything but its
    harmless value."""
    problems = []
    for key, (harmless, why) in RETIRED_KEYS.items():
        *tables, name = key
        table: object = merged
        for part in tables:
            table = table.get(part) if isinstance(table, dict) else None
        if not isinstance(table, dict) or name not in table:
            continue
        value = table.pop(name)
        if value != harmless:
            problems.append(
                f"{dotted(key)}: was removed, and {value!r} is not possible: {why} ({sources[key]})"
            )
    return problems


def _unmet_requirements(config: Config, sources: Mapping[tuple[str, ...], str]) -> list[str]:
    """Keys that another setting makes necessary. Secrets are left to `temper doctor` and to
    the channel's start, so that a config with a token still to come loads for other commands."""
    telegram = config.telegram
    if telegram.enabled and telegram.mode == "webhook" and telegram.webhook_url is None:
        origin = sources.get(("telegram", "mode"), "")
        return [
            "telegram.webhook_url: must be the public https URL Telegram posts updates to, like "
            f"'https://bot.example.org/telegram', when telegram.mode is 'webhook', got nothing "
            f"(telegram.mode {origin})"
        ]
    return []


def environment_layers(environ: Mapping[str, str]) -> list[Layer]:
    """One layer per ``TEMPER_SECTION__KEY`` variable, or ``TEMPER_KEY`` for a top-level key."""
    layers = []
    for name in sorted(environ):  # a table variable sorts before the keys that refine it
        if not name.startswith(ENV_PREFIX):
            continue
        parts = name[len(ENV_PREFIX) :].lower().split("__")
        if len(parts) == 1 and parts[0] not in Config.model_fields:
            continue
        if not all(parts):
            raise ConfigError(
                f"{name}: cannot tell which key this sets; name keys like TEMPER_MEMORY__DB_PATH"
            )
        value = _env_value(environ[name], field_at(Config, tuple(parts)))
        data: Any = value
        for part in reversed(parts):
            data = {part: data}
        layers.append(Layer(f"set by {name}", data))
    return layers


def _env_value(text: str, field: FieldInfo | None) -> object:
    """Read ``text`` as a TOML value, unless that turns a text field's value into a non-text."""
    try:
        value = tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text
    if not isinstance(value, str) and field is not None and _is_text(field):
        return text
    return value


def _is_text(field: FieldInfo) -> bool:
    annotation = field.annotation
    members = typing.get_args(annotation) if _is_union(annotation) else (annotation,)
    return any(member in (str, Path, SecretStr) for member in members)


def _is_union(annotation: object) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def _api_key_layers(layers: list[Layer], environ: Mapping[str, str]) -> list[Layer]:
    """Each slot's key, from the variable its ``api_key_env`` (as configured so far) names."""
    merged, _ = _merge(layers)
    models = merged.get("models", {})
    found = []
    for slot in SLOTS:
        given = models.get(slot, {}) if isinstance(models, dict) else {}
        name = given.get("api_key_env", ModelSlot.model_fields["api_key_env"].default)
        if isinstance(name, str) and name and environ.get(name):
            found.append(Layer(f"set by {name}", {"models": {slot: {"api_key": environ[name]}}}))
    return found


def _read_toml(path: Path, *, required: bool) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise ConfigError(
                f"{path} does not exist (run `temper init` to create a commented default)"
            ) from None
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _read_secrets(path: Path, *, required: bool) -> dict[str, Any]:
    if os.name == "posix" and path.exists():
        mode = path.stat().st_mode
        if mode & 0o077:
            raise ConfigError(
                f"{path} is open to group or others (mode {stat.filemode(mode)}); "
                f"secrets must be private: run `chmod 600 {path}`"
            )
    data = _read_toml(path, required=required)
    problems = []
    for key, _ in _leaves(data):
        if key[-1] not in SECRET_KEYS:
            hint = suggest(key[-1], SECRET_KEYS)
            problems.append(
                f"{dotted(key)}: {path.name} holds only secrets "
                f"({', '.join(sorted(SECRET_KEYS))}){hint}; put other keys in config.toml"
            )
    if problems:
        raise ConfigError(problems)
    return data


def _refuse_secrets_in_config(data: dict[str, Any], path: Path) -> None:
    problems = [
        f"{dotted(key)}: secrets do not belong in {path.name} (got {mask(str(value))}); "
        f"move it to secrets.toml (chmod 600) or set {ENV_PREFIX}{'__'.join(key).upper()}"
        for key, value in _leaves(data)
        if key[-1] in SECRET_KEYS
    ]
    if problems:
        raise ConfigError(problems)


def _leaves(data: dict[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    for key, value in data.items():
        if isinstance(value, dict):
            yield from _leaves(value, (*prefix, key))
        else:
            yield (*prefix, key), value


def _merge(layers: list[Layer]) -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    """Deep-merge the layers in order; also say which layer set each key (for error messages)."""
    merged: dict[str, Any] = {}
    sources: dict[tuple[str, ...], str] = {}

    def merge_into(
        target: dict[str, Any], data: dict[str, Any], prefix: tuple[str, ...], origin: str
    ) -> None:
        for key, value in data.items():
            path = (*prefix, key)
            sources[path] = origin
            if isinstance(value, dict):
                if not isinstance(target.get(key), dict):
                    target[key] = {}
                merge_into(target[key], value, path, origin)
            else:
                target[key] = value

    for layer in layers:
        merge_into(merged, layer.data, (), layer.origin)
    return merged, sources


# Files written by `temper init` ------------------------------------------------------------


def default_config_text() -> str:
    """A fully commented config.toml holding the defaults; it loads and validates as it is."""
    return DEFAULT_CONFIG_TEMPLATE.format(data_dir=default_data_dir())


def default_secrets_text() -> str:
    """A commented secrets.toml template with every secret key commented out."""
    return DEFAULT_SECRETS_TEMPLATE
