"""The daemon with the real Telegram channel against the fake Bot API (tests/fakes/telegram_server.py):
a conversation, an approval by inline button, and a thumbs-down landing on the right episode.
This is the contract test between connectors/daemon.py and connectors/telegram/channel.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectors.config import Config, load_config
from connectors.daemon import Daemon, DaemonSettings
from connectors.daemon.dispatch import DispatchSettings
from connectors.telegram.channel import TelegramChannel
from memory import MemoryStore
from tests.fakes.daemon_setup import base_config, until
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_server import TOKEN, FakeTelegram

pytestmark = pytest.mark.anyio

SECRET_READ = "cat ~/.ssh/temper_test_absent"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram() as fake:
        yield fake


@pytest.fixture
def config(tmp_path: Path, server: FakeOpenAI) -> Config:
    path = tmp_path / "config.toml"
    path.write_text(
        base_config(tmp_path / "data", server.base_url) + "[telegram]\nenabled = true\nallowed_users = [7]\n"
    )
    return load_config(path, environ={})


async def test_a_telegram_conversation_with_an_approval_and_a_reaction(
    config: Config, telegram: FakeTelegram, server: FakeOpenAI
) -> None:
    server.enqueue(text="Hello Alice!")
    server.enqueue(tool_calls=[{"name": "shell", "arguments": {"command": SECRET_READ}}])
    server.enqueue(text="Ran it.")
    channels = {"telegram": lambda _: TelegramChannel(TOKEN, base_url=telegram.url, poll_timeout_s=1)}
    settings = DaemonSettings(drain_timeout_s=5, dispatch=DispatchSettings(poll_s=0.05))
    daemon = Daemon(config, channels=channels, settings=settings, environ={})
    serving = asyncio.create_task(daemon.serve())
    try:
        telegram.message("hi", chat_id=7)
        await until(lambda: telegram.sent)
        hello = telegram.sent[0]
        assert hello["text"] == "Hello Alice!" and str(hello["chat_id"]) == "7"

        telegram.message("show my key", chat_id=7)
        await until(lambda: len(telegram.sent) == 2)
        prompt = telegram.sent[1]
        assert SECRET_READ in prompt["text"]
        markup = prompt["reply_markup"]
        buttons = (json.loads(markup) if isinstance(markup, str) else markup)["inline_keyboard"][0]
        yes = next(b["callback_data"] for b in buttons if b["callback_data"].startswith("yes:"))
        telegram.callback(yes, message_id=prompt["message_id"], chat_id=7)
        await until(lambda: len(telegram.sent) == 3)
        assert telegram.sent[2]["text"] == "Ran it."
        assert "operator declined" not in server.requests[2]["messages"][-1]["content"]

        telegram.reaction(hello["message_id"], "👎", chat_id=7)
        await until(lambda: _rewards(config)[0] is not None)
    finally:
        daemon.should_exit = True
        assert await serving == 0
    assert _rewards(config) == [0.0, None]


def _rewards(config: Config) -> list[float | None]:
    with MemoryStore.open(config.memory.db_path) as store:
        return [row[0] for row in store.db.execute("select reward from episodes order by id")]
