"""Which class serves each chat platform, and how the config constructs it.

A factory takes the whole `Config` and returns a `Channel` (connectors/channel.py); the daemon
calls it each time it (re)starts that channel. A factory imports its connector only when
called: a platform that is not enabled costs nothing, and a connector missing from an install
fails only its own channel (`ChannelUnavailable`). A setting a connector needs that the config
lacks is a fatal `ChannelError` whose message says what to set.

Options beyond the tokens (mode, base_url, webhook_url, ...) are passed when the config's
section defines them and they are set, so a connector's options appear here by being added to
its config section. Secret options (Telegram's webhook secret_token) are unwrapped here, at the
last moment.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from connectors.channel import Channel, ChannelError
from connectors.daemon.supervisor import ChannelUnavailable

if TYPE_CHECKING:
    from pydantic import BaseModel

    from connectors.config import Config

ChannelFactory = Callable[["Config"], Channel]

TELEGRAM_OPTIONS = (
    "mode",
    "base_url",
    "webhook_url",
    "secret_token",
    "listen_host",
    "listen_port",
    "poll_timeout_s",
)
SLACK_OPTIONS = ("mode", "base_url", "listen_host", "listen_port", "max_file_bytes", "ping_interval_s")


def telegram(config: Config) -> Channel:
    section = config.telegram
    if section.bot_token is None:
        raise ChannelError(
            "telegram: no bot token: set telegram.bot_token in secrets.toml (or TEMPER_TELEGRAM__BOT_TOKEN)",
            fatal=True,
        )
    if section.mode == "webhook" and section.secret_token is None:
        raise ChannelError(
            "telegram: webhook mode needs a secret token: set telegram.secret_token in secrets.toml "
            "(or TEMPER_TELEGRAM__SECRET_TOKEN), 1-256 of A-Z a-z 0-9 _ -",
            fatal=True,
        )
    cls = _connector("telegram", "connectors.telegram.channel", "TelegramChannel")
    try:
        return cls(
            section.bot_token.get_secret_value(),
            workspace_dir=config.data_dir / "files" / "telegram",
            **_options(section, TELEGRAM_OPTIONS),
        )
    except ValueError as error:  # the constructor's word on a bad setting
        raise ChannelError(f"telegram: {error}", fatal=True) from None


def slack(config: Config) -> Channel:
    section = config.slack
    if section.bot_token is None:
        raise ChannelError(
            "slack: no bot token: set slack.bot_token (xoxb-...) in secrets.toml (or TEMPER_SLACK__BOT_TOKEN)",
            fatal=True,
        )
    cls = _connector("slack", "connectors.slack.channel", "SlackChannel")
    options = _options(section, SLACK_OPTIONS)
    if "base_url" in options:  # slack_sdk joins method names onto it: it must end in "/"
        options["base_url"] = options["base_url"].rstrip("/") + "/"
    return cls(
        section.bot_token.get_secret_value(),
        app_token=_secret(section.app_token),
        signing_secret=_secret(section.signing_secret),
        workspace_dir=config.data_dir / "files" / "slack",
        **options,
    )


BUILTIN: dict[str, ChannelFactory] = {"telegram": telegram, "slack": slack}


def enabled_channels(config: Config) -> dict[str, ChannelFactory]:
    """The built-in channels the config enables (`[telegram] enabled = true`, ...)."""
    return {name: factory for name, factory in BUILTIN.items() if getattr(config, name).enabled}


def _connector(platform: str, module_name: str, class_name: str) -> Any:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:  # the connector, or a library it needs, is not installed
        raise ChannelUnavailable(f"the {platform} connector cannot be imported: {error}") from None
    try:
        return getattr(module, class_name)
    except AttributeError:
        raise ChannelUnavailable(f"{module_name} has no {class_name}") from None


def _options(section: BaseModel, names: tuple[str, ...]) -> dict[str, Any]:
    fields = type(section).model_fields
    given = {name: getattr(section, name) for name in names if name in fields}
    return {name: _plain(value) for name, value in given.items() if value is not None}


def _plain(value: Any) -> Any:
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def _secret(value: SecretStr | None) -> str | None:
    return None if value is None else value.get_secret_value()
