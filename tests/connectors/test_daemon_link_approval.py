"""`/link` with `[users] link_approval = "operator"` through the running daemon: a sent code only
asks; `temper users approve|deny` (the CLI, on the same database while the daemon runs) decides.
The approved account then shares the other's profile; the denied one stays apart."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from connectors.cli import app
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
    dispatch=DispatchSettings(
        poll_s=0.05, retry_base_s=0.05, typing_interval_s=0.05, link_approval="operator"
    ),
    restart=RestartPolicy(base_s=0.05, max_s=0.2, stable_s=60.0),
)
FACT = "Is training for the Lisbon marathon"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def config_path(tmp_path: Path, server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in [name for name in os.environ if name.startswith("TEMPER_")]:
        monkeypatch.delenv(name)
    path = tmp_path / "config.toml"
    path.write_text(
        base_config(tmp_path / "data", server.base_url)
        + '[users]\nextraction_every_turns = 50\nlink_approval = "operator"\n'
    )
    return path


def test_the_config_key_reaches_the_dispatcher(config_path: Path) -> None:
    config = load_config(config_path, environ={})
    assert config.users.link_approval == "operator"
    assert DaemonSettings.from_config(config).dispatch.link_approval == "operator"
    default = config_path.with_name("default.toml")
    default.write_text(f'data_dir = "{config_path.parent}"\n')
    assert load_config(default, environ={}).users.link_approval == DispatchSettings().link_approval == "none"


async def test_a_code_asks_the_operator_who_approves_one_account_and_denies_another(
    config_path: Path, tmp_path: Path, server: FakeOpenAI
) -> None:
    config: Config = load_config(config_path, environ={})
    tg, sl = LoopbackPlatform(tmp_path / "tg.db", "tg"), LoopbackPlatform(tmp_path / "sl.db", "sl")
    with MemoryStore.open(config.memory.db_path) as store:
        for platform, who in (("tg", "ana-tg"), ("sl", "ana-sl"), ("sl", "mallory")):
            store.access.grant(platform, who)
        ana = store.links.ensure_identity("tg", "ana-tg", "Ana")
        store.facts.add(ana, FACT, kind="plan")
    channels = {p.platform: (lambda _c, p=p: LoopbackChannel(p.path, p.platform)) for p in (tg, sl)}
    daemon = Daemon(config, channels=channels, settings=FAST, environ={})
    task = asyncio.create_task(daemon.serve())
    await until(lambda: daemon.dispatcher is not None or task.done())
    runner = CliRunner()

    def cli(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, ["--config", str(config_path), "users", *args])
        return result.exit_code, result.output

    def replies(who: str) -> list[str]:
        return [sent.text for sent in sl.sent() if sent.chat_id == f"c-{who}"]

    async def ask(who: str, text: str) -> str:
        before = len(replies(who))
        sl.say(who, text)
        await until(lambda: len(replies(who)) > before)
        return replies(who)[-1]

    async def code() -> str:
        before = len(tg.sent())
        tg.say("ana-tg", "/link")
        await until(lambda: len(tg.sent()) > before)
        found = re.search(r"/link ([A-Z0-9]{4}-[A-Z0-9]{4})", tg.sent()[-1].text)
        assert found is not None and "operator will be asked" in tg.sent()[-1].text, tg.sent()[-1].text
        return found.group(1)

    try:
        first = await code()
        asked = await ask("ana-sl", f"/link {first}")
        assert asked.startswith("Asked: the operator must approve joining this account to tg:ana-tg"), asked
        again = await ask("ana-sl", f"/link {first}")
        assert again.startswith("Not linked: that link code is unknown, used or expired"), again
        assert (await ask("ana-sl", "/link status")).endswith("waiting for the operator's approval.")
        with MemoryStore.open(config.memory.db_path) as store:
            assert store.user_for_identity("sl", "ana-sl") is None  # nothing linked yet

        # mallory got a code someone was shown: the operator denies it
        second = await code()
        assert (await ask("mallory", f"/link {second}")).startswith("Asked:")
        rc, listed = cli("requests")
        assert rc == 0, listed
        assert re.search(r"#1  sl:ana-sl asks to join tg:ana-tg .* pending", listed), listed
        assert re.search(r"#2  sl:mallory asks to join tg:ana-tg .* pending", listed), listed

        assert cli("deny", "2") == (0, "denied #2: sl:mallory stays apart from tg:ana-tg\n")
        rc, approved = cli("approve", "1")
        assert rc == 0 and approved.startswith("approved #1: sl:ana-sl joined tg:ana-tg"), approved
        rc, twice = cli("approve", "1")
        assert rc == 2 and "link request #1 was already approved" in twice, twice
        rc, late = cli("approve", "2")
        assert rc == 2 and "link request #2 was already denied" in late, late

        status = await ask("ana-sl", "/link status")
        assert status.startswith("Linked: the operator approved it; this account and tg:ana-tg"), status
        assert (await ask("mallory", "/link status")) == "Not linked: the operator denied request #2."
        server.enqueue(text="Good luck in Lisbon!")
        await ask("ana-sl", "any tips for my race?")
        server.enqueue(text="Hello.")
        await ask("mallory", "what do you know about me?")
    finally:
        daemon.should_exit = True
        assert await task == 0
    ana_prompt, mallory_prompt = (request["messages"][0]["content"] for request in server.requests)
    assert FACT in ana_prompt and FACT not in mallory_prompt
    with MemoryStore.open(config.memory.db_path) as store:
        assert store.user_for_identity("sl", "ana-sl") == store.user_for_identity("tg", "ana-tg") == ana
        assert store.user_for_identity("sl", "mallory") not in (None, ana)
