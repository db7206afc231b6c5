"""The secrets the configuration holds, handed to memory's redactor wherever a store is opened
for executor work: the chat and the daemon (assembly.py), `temper learn` and the nightly cycle
(learning.py), `temper trajectories export`.

Every `SecretStr` in the config counts (the models' `api_key`s, the Telegram and Slack tokens,
the signing and webhook secrets), and so does the value of each variable a model slot's
`api_key_env` names: that key never passes through the config but is sent to the provider, and
a command could print it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connectors.config import Config
    from memory import MemoryStore


def configured_secrets(config: Config, environ: Mapping[str, str] | None = None) -> list[str]:
    """Every secret value the config knows of, each once, in the order found."""
    from pydantic import BaseModel, SecretStr

    environ = os.environ if environ is None else environ
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, SecretStr):
            found.append(value.get_secret_value())
        elif isinstance(value, BaseModel):
            for name in type(value).model_fields:
                walk(getattr(value, name))

    walk(config)
    for slot in (config.models.planner, config.models.executor, config.models.judge):
        if slot.api_key_env and environ.get(slot.api_key_env):
            found.append(environ[slot.api_key_env])
    return [value for value in dict.fromkeys(found) if value]


def open_memory(config: Config, environ: Mapping[str, str] | None = None) -> MemoryStore:
    """The configured memory store, its trajectories redacted of every configured secret."""
    from memory import MemoryStore

    store = MemoryStore.open(config.memory.db_path)
    store.trajectories.set_secrets(configured_secrets(config, environ))
    return store
