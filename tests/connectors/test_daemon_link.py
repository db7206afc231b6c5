"""`/link` through the running daemon: a code asked for on one platform, sent from another, joins
the two accounts; the second account's next turn sees the first one's profile."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from connectors.config import Config, load_config
from connectors.daemon import Daemon, DaemonSettings
from connectors.daemon.dispatch import DispatchSettings
from connectors.daemon.supervisor import RestartPolicy
from memory import MemoryStore
from tests.fakes.daemon_setup import base_config, until
from tests.fakes.loopback_channel import LoopbackChannel, LoopbackPlatform
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.anyio
FAST = DaemonSettings(
    drain_timeout_s=5.0,
    status_interval_s=0.1,
    dispatch=DispatchSettings(poll_s=0.05, retry_base_s=0.05, typing_interval_s=0.05),
    restart=RestartPolicy(base_s=0.05, max_s=0.2, stable_s=60.0),
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def config(tmp_path: Path, server: FakeOpenAI) -> Config:
    path = tmp_path / "config.toml"
    path.write_text(
        base_config(tmp_path / "data", server.base_url) + "[users]\nextraction_every_turns = 50\n"
    )
    return load_config(path, environ={})


async def test_a_code_from_one_platform_links_the_other(
    config: Config, tmp_path: Path, server: FakeOpenAI
) -> None:
    tg, sl = LoopbackPlatform(tmp_path / "tg.db", "tg"), LoopbackPlatform(tmp_path / "sl.db", "sl")
    with MemoryStore.open(config.memory.db_path) as store:
        store.access.grant("tg", "ana-tg")
        store.access.grant("sl", "ana-sl")
        ana = store.links.ensure_identity("tg", "ana-tg", "Ana")
        store.facts.add(ana, "Is training for the Lisbon marathon", kind="plan")
    channels = {p.platform: (lambda _c, p=p: LoopbackChannel(p.path, p.platform)) for p in (tg, sl)}
    daemon = Daemon(config, channels=channels, settings=FAST, environ={})
    task = asyncio.create_task(daemon.serve())
    await until(lambda: daemon.dispatcher is not None or task.done())
    try:
        tg.say("ana-tg", "/link")
        await until(lambda: tg.sent())
        code = re.search(r"/link ([A-Z0-9]{4}-[A-Z0-9]{4})", tg.sent()[0].text)
        assert code is not None, tg.sent()[0].text
        sl.say("ana-sl", "/link WRONG-CODE")
        await until(lambda: sl.sent())
        assert sl.sent()[0].text.startswith("Not linked: that link code is unknown")
        sl.say("ana-sl", f"/link {code.group(1).lower()}")
        await until(lambda: len(sl.sent()) == 2)
        assert sl.sent()[1].text.startswith("Linked: this account and tg:ana-tg are one person")
        server.enqueue(text="Good luck in Lisbon!")
        sl.say("ana-sl", "any tips for my race?")
        await until(lambda: len(sl.sent()) == 3)
    finally:
        daemon.should_exit = True
        assert await task == 0
    assert "Is training for the Lisbon marathon" in server.requests[0]["messages"][0]["content"]
    with MemoryStore.open(config.memory.db_path) as store:
        assert store.user_for_identity("sl", "ana-sl") == store.user_for_identity("tg", "ana-tg") == ana
