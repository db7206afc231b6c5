"""temper's configuration: one TOML file, one secrets file and ``TEMPER_*`` environment variables.

Layers, later wins:

1. the defaults in the pydantic models below;
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
given, what would be right, and which file or variable set it.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import tomllib
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from platformdirs import user_config_dir, user_data_dir
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

APP_NAME = "temper"
ENV_PREFIX = "TEMPER_"
CONFIG_PATH_ENV = "TEMPER_CONFIG"
SECRETS_PATH_ENV = "TEMPER_SECRETS"
SECRET_KEYS = frozenset({"api_key", "bot_token", "app_token", "signing_secret"})
SLOTS = ("planner", "executor", "judge")


class ConfigError(Exception):
    """The configuration cannot be used; ``problems`` has one line per problem, with its fix."""

    def __init__(self, problems: str | list[str]) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


def mask(secret: SecretStr | str | None) -> str:
    """Show a secret as its kind and at most its last four characters: ``"sk-…abcd"``."""
    if secret is None:
        return "(not set)"
    value = secret.get_secret_value() if isinstance(secret, SecretStr) else secret
    if len(value) < 12:  # the tail of a short secret gives away too much of it
        return "…"
    kind = re.match(r"[a-z]{2,4}-", value)
    return f"{kind.group(0) if kind else ''}…{value[-4:]}"


# Field types --------------------------------------------------------------------------------


def _model_name(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/\S+", value):
        raise ValueError("a litellm model string 'provider/name' like 'openai/gpt-4o-mini'")
    return value


def _url(value: str) -> str:
    if not re.fullmatch(r"https?://\S+", value):
        raise ValueError("a URL starting with http:// or https://, like 'http://127.0.0.1:8000/v1'")
    return value.rstrip("/")


def _empty_to_none(value: object) -> object:
    return None if value == "" else value


ModelName = Annotated[str, AfterValidator(_model_name)]
Url = Annotated[str, AfterValidator(_url)]
Secret = Annotated[SecretStr | None, BeforeValidator(_empty_to_none)]
EnvName = Annotated[
    Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None,
    BeforeValidator(_empty_to_none),
]
SECRET_HELP = "a secret string, set in secrets.toml or the environment"


# The models: each field's description says what a right value looks like (errors quote it). ---


class Section(BaseModel):
    """A table of the config file: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class MemoryConfig(Section):
    db_path: Path = Field(Path("temper.db"), description="a file path (relative: inside data_dir)")
    search_scope: Literal["user", "all"] = Field("user", description="'user' or 'all'")


class ModelSlot(Section):
    """One model role. The key itself comes from ``api_key_env`` or the secrets, never the file."""

    model: ModelName = Field("openai/gpt-4o-mini", description="a litellm model string")
    api_base: Url | None = Field(None, description="a URL like 'http://127.0.0.1:8000/v1'")
    api_key_env: EnvName = Field(
        "OPENAI_API_KEY",
        description="the name of an environment variable, like 'OPENAI_API_KEY' ('' for none)",
    )
    api_key: Secret = Field(None, description=SECRET_HELP)
    temperature: float = Field(0.7, ge=0, le=2, description="a number between 0 and 2")
    max_tokens: int = Field(4096, ge=1, description="a whole number of tokens, at least 1")
    fallbacks: list[ModelName] = Field(
        default_factory=list, description="a list of litellm model strings like ['openai/gpt-4o']"
    )


# Defaults that differ by slot; applied under what the user wrote, key by key.
SLOT_DEFAULTS: dict[str, dict[str, object]] = {
    "planner": {},
    "executor": {},
    "judge": {"temperature": 0.0, "max_tokens": 1024},
}


class ModelsConfig(Section):
    planner: ModelSlot = Field(default_factory=ModelSlot, description="a table [models.planner]")
    executor: ModelSlot = Field(default_factory=ModelSlot, description="a table [models.executor]")
    judge: ModelSlot = Field(default_factory=ModelSlot, description="a table [models.judge]")

    @model_validator(mode="before")
    @classmethod
    def _slot_defaults(cls, data: object) -> object:
        if not isinstance(data, dict):
            return data
        filled = dict(data)
        for slot, defaults in SLOT_DEFAULTS.items():
            given = filled.get(slot, {})
            if isinstance(given, dict):
                filled[slot] = {**defaults, **given}
        return filled


class SandboxConfig(Section):
    backend: Literal["auto", "docker", "bwrap", "local"] = Field(
        "auto", description="one of 'auto', 'docker', 'bwrap', 'local'"
    )
    timeout_s: float = Field(
        120.0, gt=0, le=86400, description="a number of seconds above 0 and at most 86400"
    )
    memory_mb: int = Field(1024, ge=64, description="a whole number of megabytes, at least 64")
    network: bool = Field(False, description="true or false")


class TelegramConfig(Section):
    enabled: bool = Field(False, description="true or false")
    allowed_users: list[int] = Field(
        default_factory=list, description="a list of numeric Telegram user ids like [123456789]"
    )
    bot_token: Secret = Field(None, description=SECRET_HELP)


class SlackConfig(Section):
    enabled: bool = Field(False, description="true or false")
    allowed_users: list[str] = Field(
        default_factory=list, description="a list of Slack member ids like ['U012AB3CD']"
    )
    bot_token: Secret = Field(None, description=SECRET_HELP)
    app_token: Secret = Field(None, description=SECRET_HELP)
    signing_secret: Secret = Field(None, description=SECRET_HELP)


def default_data_dir() -> Path:
    return Path(user_data_dir(APP_NAME))


class Config(Section):
    """All of temper's settings. Paths come out absolute; ``memory.db_path`` lies under ``data_dir``
    unless it was given as an absolute path."""

    data_dir: Path = Field(default_factory=default_data_dir, description="a directory path")
    memory: MemoryConfig = Field(default_factory=MemoryConfig, description="a table [memory]")
    models: ModelsConfig = Field(default_factory=ModelsConfig, description="a table [models]")
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig, description="a table [sandbox]")
    telegram: TelegramConfig = Field(
        default_factory=TelegramConfig, description="a table [telegram]"
    )
    slack: SlackConfig = Field(default_factory=SlackConfig, description="a table [slack]")

    @model_validator(mode="after")
    def _resolve_paths(self) -> Config:
        self.data_dir = self.data_dir.expanduser().absolute()
        db_path = self.memory.db_path.expanduser()
        if not db_path.is_absolute():
            self.memory = self.memory.model_copy(update={"db_path": self.data_dir / db_path})
        return self


# Loading ------------------------------------------------------------------------------------


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


def resolve_secrets_path(
    secrets_path: Path | None, config_path: Path, environ: Mapping[str, str]
) -> Path:
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
    config_data = _read_toml(
        config_file, required=path is not None or bool(env.get(CONFIG_PATH_ENV))
    )
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
    try:
        return Config.model_validate(merged)
    except ValidationError as exc:
        # `from None`: the pydantic error quotes inputs in full, secrets included.
        raise ConfigError([_describe(error, sources) for error in exc.errors()]) from None


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
        value = _env_value(environ[name], _field_at(tuple(parts)))
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
            hint = _suggest(key[-1], SECRET_KEYS)
            problems.append(
                f"{_dotted(key)}: {path.name} holds only secrets "
                f"({', '.join(sorted(SECRET_KEYS))}){hint}; put other keys in config.toml"
            )
    if problems:
        raise ConfigError(problems)
    return data


def _refuse_secrets_in_config(data: dict[str, Any], path: Path) -> None:
    problems = [
        f"{_dotted(key)}: secrets do not belong in {path.name} (got {mask(str(value))}); "
        f"move it to secrets.toml (chmod 600) or set {ENV_PREFIX}{'__'.join(key).upper()}"
        for key, value in _leaves(data)
        if key[-1] in SECRET_KEYS
    ]
    if problems:
        raise ConfigError(problems)


def _leaves(
    data: dict[str, Any], prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any]]:
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


# Error messages -----------------------------------------------------------------------------


def _describe(error: ErrorDetails, sources: dict[tuple[str, ...], str]) -> str:
    """One line: which key, what was given, what would be right, and who set it."""
    loc = tuple(error["loc"])
    origin = _origin(loc, sources)
    if error["type"] == "extra_forbidden":
        parent, name = loc[:-1], str(loc[-1])
        where = f"{_dotted(parent)}: " if parent else ""
        return f"{where}unknown key {name!r}{_suggest(name, _known_keys(parent))}{origin}"
    field = _field_at(loc)
    if error["type"] == "value_error" and "error" in error.get("ctx", {}):
        expected = str(error["ctx"]["error"])
    elif field is not None and field.description:
        expected = field.description
    else:
        expected = error["msg"][0].lower() + error["msg"][1:]
    given = error.get("input")
    hint = ""
    if error["type"] == "literal_error" and field is not None:
        hint = _suggest(str(given), [str(option) for option in typing.get_args(field.annotation)])
    return f"{_dotted(loc)}: must be {expected}, got {_shown(loc, given)}{hint}{origin}"


def _shown(loc: tuple[Any, ...], value: object) -> str:
    names = {part for part in loc if isinstance(part, str)}
    if names & (SECRET_KEYS | {"api_key_env"}):  # a pasted key is a common api_key_env mistake
        return mask(str(value))
    if isinstance(value, dict):
        return "a table"
    return repr(value)


def _origin(loc: tuple[Any, ...], sources: dict[tuple[str, ...], str]) -> str:
    for end in range(len(loc), 0, -1):
        if loc[:end] in sources:
            return f" ({sources[loc[:end]]})"
    return ""


def _suggest(word: str, candidates: typing.Iterable[str]) -> str:
    options = sorted(candidates)
    close = difflib.get_close_matches(word, options, n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (known keys: {', '.join(options)})" if options else ""


def _dotted(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = Config
    for part in loc:
        if isinstance(part, int):
            continue
        if model is None or part not in model.model_fields:
            return None
        model = _as_model(model.model_fields[part].annotation)
    return model


def _field_at(loc: tuple[Any, ...]) -> FieldInfo | None:
    names = [part for part in loc if isinstance(part, str)]
    if not names:
        return None
    parent = _model_at(tuple(names[:-1]))
    return parent.model_fields.get(names[-1]) if parent is not None else None


def _known_keys(loc: tuple[Any, ...]) -> list[str]:
    model = _model_at(loc)
    return list(model.model_fields) if model is not None else []


def _as_model(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


# Files written by `temper init` ------------------------------------------------------------


def default_config_text() -> str:
    """A fully commented config.toml holding the defaults; it loads and validates as it is."""
    return DEFAULT_CONFIG_TEMPLATE.format(data_dir=default_data_dir())


def default_secrets_text() -> str:
    """A commented secrets.toml template with every secret key commented out."""
    return DEFAULT_SECRETS_TEMPLATE


DEFAULT_CONFIG_TEMPLATE = """\
# temper configuration. Every key is optional: delete a line and its default applies.
#
# Any key can also be set from the environment as TEMPER_<SECTION>__<KEY>, which wins over this
# file, e.g. TEMPER_MODELS__PLANNER__MODEL=ollama/qwen3:8b or TEMPER_SANDBOX__NETWORK=true.
# Values are read as TOML when they parse (numbers, true/false, ["lists"]), as text otherwise.
#
# Secrets (API keys, bot tokens, the Slack signing secret) never go in this file. Put them in
# secrets.toml next to it (chmod 600; `temper init` creates it) or in the environment:
#   models.<slot>.api_key   the variable named by api_key_env (e.g. OPENAI_API_KEY),
#                           or TEMPER_MODELS__<SLOT>__API_KEY
#   telegram.bot_token      TEMPER_TELEGRAM__BOT_TOKEN
#   slack.bot_token         TEMPER_SLACK__BOT_TOKEN
#   slack.app_token         TEMPER_SLACK__APP_TOKEN (Socket Mode)
#   slack.signing_secret    TEMPER_SLACK__SIGNING_SECRET (HTTP events)

# Where temper keeps its database, skills and executor adapters.
# Default: the platform's user data directory, here {data_dir}
# data_dir = "~/temper-data"

[memory]
# The SQLite database. A relative path is taken inside data_dir.
db_path = "temper.db"
# Whose past conversations a memory search may see: "user" (only the asking user's) or "all".
search_scope = "user"

# Model slots. model is a litellm model string, "provider/name": "openai/gpt-4o-mini",
# "anthropic/claude-sonnet-4-5", "ollama/qwen3:8b", "hosted_vllm/Qwen/Qwen3-8B".
#   api_base     the server's URL, for self-hosted or OpenAI-compatible servers (optional),
#                e.g. "http://127.0.0.1:8000/v1"; `temper doctor` checks GET {{api_base}}/models
#   api_key_env  the environment variable that holds this slot's API key ("" for none)
#   temperature  sampling temperature, 0 to 2
#   max_tokens   the most tokens one reply may have
#   fallbacks    models to try, in order, when this one fails

# The planner talks to people, recalls memories and calls tools.
[models.planner]
model = "openai/gpt-4o-mini"
# api_base = "http://127.0.0.1:8000/v1"
api_key_env = "OPENAI_API_KEY"
temperature = 0.7
max_tokens = 4096
fallbacks = []

# The executor does terminal work in the sandbox; the learner trains it nightly.
[models.executor]
model = "openai/gpt-4o-mini"
# api_base = "http://127.0.0.1:8000/v1"
api_key_env = "OPENAI_API_KEY"
temperature = 0.7
max_tokens = 4096
fallbacks = []

# The judge scores outcomes that have no verifier.
[models.judge]
model = "openai/gpt-4o-mini"
# api_base = "http://127.0.0.1:8000/v1"
api_key_env = "OPENAI_API_KEY"
temperature = 0.0
max_tokens = 1024
fallbacks = []

[sandbox]
# "auto" picks the strongest backend present: docker, then bwrap. "local" runs commands as
# plain subprocesses: the weakest isolation, used only when chosen here.
backend = "auto"
# Seconds one command may run before it is killed.
timeout_s = 120.0
# Memory limit for the sandbox, in megabytes.
memory_mb = 1024
# Whether sandboxed commands may reach the network.
network = false

[telegram]
enabled = false
# Numeric Telegram user ids allowed to talk to the bot; anyone else needs a pairing code.
allowed_users = []

[slack]
enabled = false
# Slack member ids allowed to talk to the bot, like "U012AB3CD".
allowed_users = []
"""

DEFAULT_SECRETS_TEMPLATE = """\
# temper secrets. Keep this file private (chmod 600): temper refuses to read it otherwise.
# Environment variables win over this file (see config.toml).

# [models.planner]
# api_key = "sk-..."

# [telegram]
# bot_token = "123456789:AA..."

# [slack]
# bot_token = "xoxb-..."
# app_token = "xapp-..."        # Socket Mode
# signing_secret = "..."        # HTTP events
"""
