"""`temper doctor`: is this machine ready to run temper? One line per finding: ok, warn or fail.

A check is a small async function of the loaded ``Config`` and the environment that returns
``CheckResult``s; ``run_checks`` runs them concurrently and keeps their order. "fail" is kept
for what temper cannot run without: a valid config, a writable data dir, a database that opens,
the sandbox backend the config names, the tokens of an enabled connector. Everything optional
is at worst "warn", and ``exit_code`` is 1 only when something failed.

Checks report what they find instead of raising. Heavy or optional libraries (docker, the
memory package) are imported inside the check that needs them, so a broken one shows up as a
failed line rather than a crashed doctor.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
from pydantic import SecretStr

from connectors.config import (
    SLOTS,
    Config,
    ConfigError,
    ModelSlot,
    load_config,
    mask,
    resolve_config_path,
)

if TYPE_CHECKING:
    from runtime import BackendStatus


class Status(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: Status
    detail: str


Check = Callable[[Config, Mapping[str, str]], Awaitable[list[CheckResult]]]

EXTRAS = {  # importable module -> the pip extra that provides it
    "torch": "learn",
    "transformers": "learn",
    "peft": "learn",
    "sqlite_vec": "embeddings",
    "sentence_transformers": "embeddings",
}
DATABASE_FIGURES = ("users", "messages", "episodes", "schema_version")


def check_config(
    path: Path | None, secrets_path: Path | None, environ: Mapping[str, str]
) -> tuple[CheckResult, Config | None]:
    """Load the config as every command would; the other checks need its result."""
    config_file = resolve_config_path(path, environ)
    try:
        config = load_config(path, environ, secrets_path=secrets_path)
    except ConfigError as exc:
        return CheckResult("config", Status.FAIL, "\n      ".join(exc.problems)), None
    if not config_file.exists():
        detail = f"no file at {config_file}; using the defaults (run `temper init`)"
        return CheckResult("config", Status.WARN, detail), config
    return CheckResult("config", Status.OK, f"{config_file} is valid"), config


async def check_data_dir(config: Config, environ: Mapping[str, str]) -> list[CheckResult]:
    data_dir = config.data_dir
    if not data_dir.is_dir():
        return [CheckResult("data_dir", Status.FAIL, f"{data_dir} does not exist (run `temper init`)")]
    try:
        with tempfile.NamedTemporaryFile(dir=data_dir, prefix=".doctor-"):
            pass
    except OSError as exc:
        return [CheckResult("data_dir", Status.FAIL, f"{data_dir} is not writable: {exc.strerror}")]
    return [CheckResult("data_dir", Status.OK, f"{data_dir} is writable")]


async def check_database(config: Config, environ: Mapping[str, str]) -> list[CheckResult]:
    db_path = config.memory.db_path
    if not db_path.parent.is_dir():
        detail = f"{db_path}: its folder does not exist (run `temper init`)"
        return [CheckResult("database", Status.FAIL, detail)]
    try:
        stats = await asyncio.to_thread(_database_stats, db_path)
    except Exception as exc:  # whatever the memory package raises, doctor reports it
        return [CheckResult("database", Status.FAIL, f"{db_path}: {type(exc).__name__}: {exc}")]
    counts = ", ".join(f"{key} {stats[key]}" for key in DATABASE_FIGURES if key in stats)
    return [CheckResult("database", Status.OK, f"{db_path} opens" + (f" ({counts})" if counts else ""))]


def _database_stats(db_path: Path) -> dict[str, object]:
    from memory import MemoryStore

    store = MemoryStore.open(db_path)
    try:
        stats = store.stats()
        return dataclasses.asdict(stats) if dataclasses.is_dataclass(stats) else dict(stats)
    finally:
        store.close()


async def check_secrets(config: Config, environ: Mapping[str, str]) -> list[CheckResult]:
    """Say which secrets are set (masked); an enabled connector without its tokens fails."""
    slots_by_finding: dict[tuple[Status, str], list[str]] = {}
    for slot in SLOTS:
        finding = _api_key_finding(getattr(config.models, slot))
        slots_by_finding.setdefault(finding, []).append(slot)
    results = [
        CheckResult(_slots_key(slots, "api_key"), status, detail)
        for (status, detail), slots in slots_by_finding.items()
    ]
    telegram, slack = config.telegram, config.slack
    results.append(_connector("telegram", telegram.enabled, {"bot_token": telegram.bot_token}))
    modes = {"app_token": slack.app_token, "signing_secret": slack.signing_secret}
    present = {key: value for key, value in modes.items() if value is not None}
    slack_tokens = {
        "bot_token": slack.bot_token,
        **(present or {"app_token or signing_secret": None}),
    }
    results.append(_connector("slack", slack.enabled, slack_tokens))
    return results


def _api_key_finding(settings: ModelSlot) -> tuple[Status, str]:
    if settings.api_key is not None:
        return Status.OK, f"API key {mask(settings.api_key)}"
    if settings.api_key_env:
        return Status.WARN, (
            f"no API key: set {settings.api_key_env} or api_key in secrets.toml "
            '(api_key_env = "" for a model that needs none)'
        )
    return Status.OK, "no API key needed"


def _connector(name: str, enabled: bool, tokens: Mapping[str, SecretStr | None]) -> CheckResult:
    if not enabled:
        return CheckResult(name, Status.OK, "disabled")
    missing = [key for key, value in tokens.items() if value is None]
    if missing:
        keys = ", ".join(f"{name}.{key}" for key in missing)
        return CheckResult(name, Status.FAIL, f"enabled, but {keys} not set (secrets.toml or TEMPER_*)")
    shown = ", ".join(f"{key} {mask(value)}" for key, value in tokens.items())
    return CheckResult(name, Status.OK, f"enabled, {shown}")


async def check_sandboxes(config: Config, environ: Mapping[str, str]) -> list[CheckResult]:
    """Each sandbox backend's own probe (runtime.available_backends), strongest first, then
    which one is the strongest that works: a warning when that is `local` (or none)."""
    from runtime import available_backends

    statuses = await available_backends()
    results = []
    for status in statuses:
        required = config.sandbox.backend == status.name
        if status.name == "local":
            if required:
                detail = "chosen in sandbox.backend: commands run WITHOUT isolation, only rlimits"
                results.append(CheckResult("local", Status.WARN, detail))
            else:
                results.append(
                    CheckResult(
                        "local", Status.OK, "available (weakest; only when sandbox.backend = 'local')"
                    )
                )
        elif status.available:
            results.append(CheckResult(status.name, Status.OK, status.detail))
        else:
            results.append(_sandbox(status.name, required, status.detail))
    return [*results, _strongest_sandbox(config, statuses)]


async def check_model_endpoints(config: Config, environ: Mapping[str, str]) -> list[CheckResult]:
    """GET {api_base}/models for each slot that names a server; unreachable ones are warnings."""
    slots = [(slot, getattr(config.models, slot)) for slot in SLOTS]
    served = [(slot, settings) for slot, settings in slots if settings.api_base]
    if not served:
        detail = "none set; hosted providers are not probed"
        return [CheckResult(_slots_key(SLOTS, "api_base"), Status.OK, detail)]
    async with httpx.AsyncClient(timeout=2.0) as client:
        return list(
            await asyncio.gather(
                *(
                    _probe_endpoint(client, _slots_key([slot], "api_base"), settings)
                    for slot, settings in served
                )
            )
        )


async def _probe_endpoint(client: httpx.AsyncClient, name: str, settings: ModelSlot) -> CheckResult:
    key = settings.api_key
    headers = {"Authorization": f"Bearer {key.get_secret_value()}"} if key else {}
    api_base = settings.api_base
    url = f"{api_base}/models"
    try:
        response = await client.get(url, headers=headers)
    except httpx.HTTPError as exc:
        return CheckResult(name, Status.WARN, f"{url} unreachable: {_short(exc) or type(exc).__name__}")
    if response.status_code in (401, 403):
        return CheckResult(name, Status.WARN, f"{url} refused the API key (HTTP {response.status_code})")
    if response.status_code != 200:
        return CheckResult(name, Status.WARN, f"{url} answered HTTP {response.status_code}")
    served = _served_models(response)
    wanted = settings.model.split("/", 1)[1]
    if served and wanted not in served:
        listed = ", ".join(served[:5])
        return CheckResult(name, Status.WARN, f"{api_base} serves {listed}, not {wanted!r}")
    return CheckResult(name, Status.OK, f"{api_base} answers")


def _served_models(response: httpx.Response) -> list[str]:
    try:
        entries = response.json().get("data", [])
    except (ValueError, AttributeError):  # not JSON, or not the OpenAI shape
        return []
    return [str(entry["id"]) for entry in entries if isinstance(entry, dict) and "id" in entry]


async def check_extras(config: Config, environ: Mapping[str, str]) -> list[CheckResult]:
    missing = [module for module in EXTRAS if importlib.util.find_spec(module) is None]
    if not missing:
        return [CheckResult("extras", Status.OK, ", ".join(EXTRAS))]
    groups = sorted({EXTRAS[module] for module in missing})
    hint = " ".join(f"'temper[{group}]'" for group in groups)
    detail = f"missing {', '.join(missing)} (pip install {hint}; CPU: torch==2.13.0 first)"
    return [CheckResult("extras", Status.WARN, detail)]


CONFIG_CHECKS: list[Check] = [check_data_dir, check_database, check_secrets, check_model_endpoints]
HOST_CHECKS: list[Check] = [check_sandboxes, check_extras]


async def run_checks(
    config: Config, environ: Mapping[str, str], checks: Sequence[Check]
) -> list[CheckResult]:
    """Run ``checks`` concurrently; results come back in the order of ``checks``."""
    batches = await asyncio.gather(*(check(config, environ) for check in checks))
    return [result for batch in batches for result in batch]


async def run_doctor(
    path: Path | None, secrets_path: Path | None, environ: Mapping[str, str]
) -> list[CheckResult]:
    """Everything `temper doctor` reports. With a broken config only the host checks run."""
    first, config = check_config(path, secrets_path, environ)
    if config is None:
        return [first, *await run_checks(Config(), environ, HOST_CHECKS)]
    return [first, *await run_checks(config, environ, [*CONFIG_CHECKS, *HOST_CHECKS])]


def exit_code(results: Sequence[CheckResult]) -> int:
    return 1 if any(result.status is Status.FAIL for result in results) else 0


def _slots_key(slots: Sequence[str], key: str) -> str:
    """``models.planner.api_key``, or ``models.{planner,judge}.api_key`` for several slots."""
    names = slots[0] if len(slots) == 1 else "{" + ",".join(slots) + "}"
    return f"models.{names}.{key}"


def _sandbox(name: str, required: bool, detail: str) -> CheckResult:
    if required:
        return CheckResult(name, Status.FAIL, f"{detail}; it is sandbox.backend")
    return CheckResult(name, Status.WARN, detail)


def _strongest_sandbox(config: Config, statuses: Sequence[BackendStatus]) -> CheckResult:
    strongest = next((status.name for status in statuses if status.available), None)
    if strongest not in (None, "local"):
        return CheckResult("sandbox", Status.OK, f"strongest available: {strongest}")
    consequence = (
        "sandbox.backend = 'auto' will refuse to run commands"
        if config.sandbox.backend == "auto"
        else "commands can only run WITHOUT isolation"
    )
    return CheckResult(
        "sandbox",
        Status.WARN,
        f"the strongest sandbox that works here is {strongest or 'none'}: {consequence}; "
        "install bubblewrap (apt-get install bubblewrap) or start Docker with the temper-sandbox image",
    )


def _short(error: object, limit: int = 200) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
