"""temper's configuration: the settings' models (schema.py), how files and the environment fill
them (loading.py), the files `temper init` writes (template.py) and how problems and secrets
are shown to people (messages.py)."""

from connectors.config.loading import (
    default_config_text,
    default_secrets_text,
    load_config,
    resolve_config_path,
    resolve_secrets_path,
)
from connectors.config.messages import mask
from connectors.config.schema import (
    SECRET_KEYS,
    SLOTS,
    Config,
    ConfigError,
    DaemonConfig,
    ExecutorConfig,
    MemoryConfig,
    ModelsConfig,
    ModelSlot,
    SandboxConfig,
    SlackConfig,
    TelegramConfig,
)

__all__ = [
    "SECRET_KEYS",
    "SLOTS",
    "Config",
    "ConfigError",
    "DaemonConfig",
    "ExecutorConfig",
    "MemoryConfig",
    "ModelSlot",
    "ModelsConfig",
    "SandboxConfig",
    "SlackConfig",
    "TelegramConfig",
    "default_config_text",
    "default_secrets_text",
    "load_config",
    "mask",
    "resolve_config_path",
    "resolve_secrets_path",
]
