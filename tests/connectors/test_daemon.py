"""The daemon in-process, end to end: a loopback channel (tests/fakes/loopback_channel.py: a real
Channel whose platform is a SQLite file) on one side, the fake OpenAI server scripting the
planner on the other, a real memory database and the local sandbox in between. Assertions are
on what the "platform" received, on rows in the database and on what the model was sent."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from connectors.channel import Outgoing
from connectors.cli import app
from connectors.config import Config, load_config
from connectors.daemon import Daemon, DaemonError, DaemonSettings
from connectors.daemon.dispatch import DispatchSettings
from connectors.daemon.inbox import encode
from connectors.daemon.status import read_report
from connectors.daemon.supervisor import RestartPolicy
from memory import MemoryStore
from runtime import Inbound
from tests.fakes.daemon_setup import base_config, until
from tests.fakes.loopback_channel import LoopbackChannel, LoopbackPlatform
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.anyio

SECRET_READ = "cat ~/.ssh/temper_test_absent"  # the policy asks first; the sandbox's home has no such file
FAST = DaemonSettings(
    drain_timeout_s=5.0,
    status_interval_s=0.1,
    dispatch=DispatchSettings(poll_s=0.05, retry_base_s=0.05, typing_interval_s=0.05, approval_timeout_s=5.0),
    restart=RestartPolicy(base_s=0.05, max_s=0.2, stable_s=60.0),
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def config_file(tmp_path: Path, server: FakeOpenAI) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(base_config(tmp_path / "data", server.base_url))
    return path


@pytest.fixture
def config(config_file: Path) -> Config:
    return load_config(config_file, environ={})


@pytest.fixture
def platform(tmp_path: Path) -> LoopbackPlatform:
    return LoopbackPlatform(tmp_path / "platform.db")


def daemon_for(config: Config, *platforms: LoopbackPlatform, settings: DaemonSettings = FAST) -> Daemon:
    channels = {p.platform: _factory(p) for p in platforms}
    return Daemon(config, channels=channels, settings=settings, environ={})


def _factory(platform: LoopbackPlatform) -> Callable[[Config], LoopbackChannel]:
    return lambda _config: LoopbackChannel(platform.path, platform.platform)


def let_in(config: Config, *users: str, platform: str = "loopback") -> None:
    with MemoryStore.open(config.memory.db_path) as store:
        for user in users:
            store.access.grant(platform, user)


@asynccontextmanager
async def running(daemon: Daemon) -> AsyncIterator[Daemon]:
    task = asyncio.create_task(daemon.serve())
    await until(lambda: daemon.dispatcher is not None or task.done())
    try:
        yield daemon
    finally:
        daemon.should_exit = True
        assert await task == 0


def inbox_statuses(config: Config) -> list[str]:
    with MemoryStore.open(config.memory.db_path) as store:
        return [row[0] for row in store.db.execute("select status from inbox order by id")]


# --- messages in, replies out -------------------------------------------------------------------


async def test_a_message_gets_one_reply(
    config: Config, platform: LoopbackPlatform, server: FakeOpenAI
) -> None:
    let_in(config, "ana")
    server.enqueue(text="Hello Ana!", delay=0.2)
    async with running(daemon_for(config, platform)):
        asked = platform.say("ana", "hi there")
        await until(lambda: platform.sent())
    [reply] = platform.sent()
    assert (reply.chat_id, reply.reply_to, reply.text) == ("c-ana", asked, "Hello Ana!")
    assert server.requests[0]["messages"][-1] == {"role": "user", "content": "hi there"}
    assert platform.typing_count() >= 1  # shown while the model took its 0.2 s
    assert inbox_statuses(config) == ["done"]
    report = read_report(config.data_dir / "daemon.json")
    assert report["state"] == "stopped" and report["channels"][0]["name"] == "loopback"
    assert report["queue"]["pending"] == 0 and {"memory-maintenance", "index-merge"} <= set(report["jobs"])


async def test_a_repeated_delivery_gets_no_second_reply(
    config: Config, platform: LoopbackPlatform, server: FakeOpenAI
) -> None:
    let_in(config, "ana")
    server.enqueue(text="once")
    async with running(daemon_for(config, platform)):
        platform.say("ana", "hi", message_id="m-1")
        await until(lambda: platform.sent())
        platform.redeliver()  # the platform sends every update again, as after a lost ack
        await until(lambda: platform.unacked() == 0)
        await asyncio.sleep(0.2)
    assert [s.text for s in platform.sent()] == ["once"]
    assert len(server.requests) == 1 and inbox_statuses(config) == ["done"]


async def test_one_session_in_order_sessions_side_by_side(
    config: Config, platform: LoopbackPlatform, server: FakeOpenAI
) -> None:
    let_in(config, "ana", "bo")
    for _ in range(4):
        server.enqueue(text="ok", delay=0.3)
    async with running(daemon_for(config, platform)):
        for text in ("a1", "a2", "a3"):
            platform.say("ana", text)
        platform.say("bo", "b1")
        await until(lambda: len(server.requests) >= 2)
        # ana's first and bo's run together (each answer takes 0.3 s); a2 waits for a1's answer
        assert sorted(request["messages"][-1]["content"] for request in server.requests) == ["a1", "b1"]
        assert platform.sent() == []
        await until(lambda: len(platform.sent()) == 4)
    asked = [request["messages"][-1]["content"] for request in server.requests]
    assert [text for text in asked if text.startswith("a")] == ["a1", "a2", "a3"]
    a3 = next(r for r in server.requests if r["messages"][-1]["content"] == "a3")["messages"]
    assert [m["content"] for m in a3 if m["role"] != "system"] == ["a1", "ok", "a2", "ok", "a3"]


async def test_a_failed_model_call_gets_an_apology(
    config: Config, platform: LoopbackPlatform, server: FakeOpenAI
) -> None:
    let_in(config, "ana")
    server.enqueue(error=400, message="the model is not loaded")
    async with running(daemon_for(config, platform)):
        platform.say("ana", "hi")
        await until(lambda: platform.sent())
    [reply] = platform.sent()
    assert reply.text.startswith("Sorry, I could not answer that:") and "not loaded" in reply.text
    assert inbox_statuses(config) == ["done"]


# --- access -------------------------------------------------------------------------------------


async def test_a_stranger_gets_one_pairing_reply_and_nothing_reaches_the_agent(
    config: Config, config_file: Path, platform: LoopbackPlatform, server: FakeOpenAI
) -> None:
    server.enqueue(text="Welcome, Eve.")
    async with running(daemon_for(config, platform)):
        for text in ("hello?", "anyone?", "please"):
            platform.say("eve", text)
        await until(lambda: platform.unacked() == 0 and "pending" not in inbox_statuses(config))
        [pairing] = platform.sent()
        assert "temper pairing approve" in pairing.text and server.requests == []
        assert inbox_statuses(config) == ["done", "dropped", "dropped"]

        code = pairing.text.split("temper pairing approve ")[1].split()[0]
        approved = CliRunner().invoke(app, ["--config", str(config_file), "pairing", "approve", code])
        assert approved.exit_code == 0, approved.output
        assert "let in loopback:eve" in approved.stdout

        platform.say("eve", "hello again")
        await until(lambda: len(platform.sent()) == 2)
    assert platform.sent()[1].text == "Welcome, Eve."
    assert [r["messages"][-1]["content"] for r in server.requests] == ["hello again"]


# --- approvals, reactions, feedback ----------------------------------------------------------------


async def test_approvals_by_button(config: Config, platform: LoopbackPlatform, server: FakeOpenAI) -> None:
    let_in(config, "ana", "bo")
    server.enqueue(tool_calls=[{"name": "shell", "arguments": {"command": SECRET_READ}}])
    server.enqueue(text="Ran it.")
    async with running(daemon_for(config, platform)) as daemon:
        platform.say("ana", "show my key")
        await until(lambda: platform.prompts())
        [(chat, approval_id, command)] = platform.prompts()
        assert (chat, command) == ("c-ana", SECRET_READ)
        platform.press("bo", approval_id, "yes", chat="c-ana")  # not bo's to answer
        platform.press("ana", "no-such-approval", "yes")
        await until(lambda: len(platform.sent()) == 2)
        assert len(daemon.dispatcher.approvals) == 1
        platform.press("ana", approval_id, "yes")
        await until(lambda: len(platform.sent()) == 3)
    notes = {s.text for s in platform.sent()[:2]}
    assert notes == {
        "Only the person who asked me can answer that.",
        "That approval has expired or was already answered.",
    }
    assert platform.sent()[2].text == "Ran it."
    tool_result = server.requests[1]["messages"][-1]
    assert tool_result["role"] == "tool" and "operator declined" not in tool_result["content"]


async def test_an_unanswered_approval_is_declined(
    config: Config, platform: LoopbackPlatform, server: FakeOpenAI
) -> None:
    let_in(config, "ana")
    server.enqueue(tool_calls=[{"name": "shell", "arguments": {"command": SECRET_READ}}])
    server.enqueue(text="Declined, fine.")
    quick = DaemonSettings(dispatch=DispatchSettings(poll_s=0.05, approval_timeout_s=0.2))
    async with running(daemon_for(config, platform, settings=quick)) as daemon:
        platform.say("ana", "show my key")
        await until(lambda: platform.sent())
        assert len(daemon.dispatcher.approvals) == 0
    assert "operator declined" in server.requests[1]["messages"][-1]["content"]


async def test_a_reaction_rewards_the_episode_of_the_reacted_to_reply(
    config: Config, platform: LoopbackPlatform, server: FakeOpenAI
) -> None:
    let_in(config, "ana", "bo")
    server.enqueue(text="first answer")
    server.enqueue(text="second answer")
    async with running(daemon_for(config, platform)):
        platform.say("ana", "q1")
        await until(lambda: len(platform.sent()) == 1)
        platform.say("ana", "q2")
        await until(lambda: len(platform.sent()) == 2)
        first, _ = platform.sent()
        platform.react("bo", first.message_id, True, chat="c-ana")  # not bo's answer: ignored
        platform.react("ana", first.message_id, False)
        await until(lambda: "pending" not in inbox_statuses(config) and platform.unacked() == 0)
    assert inbox_statuses(config)[2:] == ["dropped", "done"]
    with MemoryStore.open(config.memory.db_path) as store:
        rewards = store.db.execute("select task, reward, reward_source from episodes order by id").fetchall()
    assert rewards == [("q1", 0.0, "user"), ("q2", None, None)]


async def test_good_and_bad_rate_the_latest_answer(
    config: Config, platform: LoopbackPlatform, server: FakeOpenAI
) -> None:
    let_in(config, "ana")
    server.enqueue(text="an answer")
    async with running(daemon_for(config, platform)):
        platform.say("ana", "/good")
        await until(lambda: len(platform.sent()) == 1)
        platform.say("ana", "q")
        await until(lambda: len(platform.sent()) == 2)
        platform.say("ana", "/good")
        await until(lambda: len(platform.sent()) == 3)
    assert [s.text for s in platform.sent()] == [
        "There is no answer of mine here to rate yet.",
        "an answer",
        "Thanks, noted as a good answer.",
    ]
    with MemoryStore.open(config.memory.db_path) as store:
        assert store.db.execute("select reward, reward_source from episodes").fetchall() == [(1.0, "user")]


# --- channels failing, one daemon per data dir ---------------------------------------------------


async def test_a_failing_channel_is_restarted_while_another_keeps_working(
    config: Config, tmp_path: Path, platform: LoopbackPlatform, server: FakeOpenAI
) -> None:
    other = LoopbackPlatform(tmp_path / "other.db", platform="other")
    other.set_down(True)
    let_in(config, "ana")
    let_in(config, "ana", platform="other")
    server.enqueue(text="from loopback")
    server.enqueue(text="from other")
    async with running(daemon_for(config, platform, other)) as daemon:
        supervisor = daemon.supervisors["other"]
        await until(lambda: supervisor.restarts >= 3)
        assert supervisor.state in ("starting", "backoff") and "down" in supervisor.last_error
        platform.say("ana", "hi")
        await until(lambda: platform.sent())  # the other channel's trouble is its own

        other.say("ana", "hi there")
        other.set_down(False)
        await until(lambda: other.sent())
        assert supervisor.state == "running"

        restarts = supervisor.restarts
        other.set_down(True)  # receiving stops on its own: wait_stopped raises, a restart follows
        await until(lambda: supervisor.restarts > restarts)
        other.set_down(False)
        await until(lambda: supervisor.state == "running")
        await asyncio.sleep(0.15)
        report = read_report(config.data_dir / "daemon.json")
    assert [s.text for s in platform.sent()] == ["from loopback"]
    assert [s.text for s in other.sent()] == ["from other"]
    states = {c["name"]: c for c in report["channels"]}
    assert states["other"]["restarts"] == supervisor.restarts and states["loopback"]["restarts"] == 0


async def test_a_channel_that_does_not_exist_fails_alone(
    config: Config, platform: LoopbackPlatform, server: FakeOpenAI
) -> None:
    enabled = config.model_copy(update={"telegram": config.telegram.model_copy(update={"enabled": True})})
    daemon = Daemon(enabled, channels=None, settings=FAST, environ={})
    async with running(daemon):
        await until(lambda: daemon.supervisors["telegram"].state == "failed")
    assert "no bot token" in daemon.supervisors["telegram"].last_error


async def test_a_second_daemon_on_the_same_data_dir_is_refused(
    config: Config, platform: LoopbackPlatform
) -> None:
    async with running(daemon_for(config, platform)):
        with pytest.raises(DaemonError, match="another temper daemon"):
            await daemon_for(config, platform).serve()


async def test_a_reply_recorded_before_a_crash_is_sent_once_without_a_new_turn(
    config: Config, platform: LoopbackPlatform, server: FakeOpenAI
) -> None:
    """The state a crash leaves between recording a reply and recording it sent: sent once
    (not at all when the platform has it already), and the model is not asked again."""
    let_in(config, "ana")
    with MemoryStore.open(config.memory.db_path) as store:
        replies = []
        for n in (1, 2):
            asked = Inbound("loopback", "c-ana", "ana", f"question {n}", platform_message_id=f"m-{n}")
            encoded = encode(asked)
            item = store.inbox.add("loopback", encoded.event_id, encoded.kind, encoded.lane, encoded.payload)
            replies.append(store.inbox.add_reply(
                item, platform="loopback", chat_id="c-ana", thread_id="", reply_to=f"m-{n}",
                text=f"recorded answer {n}", episode_id=None,
            ))  # fmt: skip
    earlier = LoopbackChannel(platform.path)  # the crashed daemon's channel got the second one out
    await earlier.start(lambda item: asyncio.sleep(0))
    await earlier.send(
        Outgoing("c-ana", "recorded answer 2", reply_to="m-2", idempotency_key=replies[1].idempotency_key)
    )
    await earlier.stop()

    async with running(daemon_for(config, platform)):
        await until(lambda: "pending" not in inbox_statuses(config))
    assert [(s.reply_to, s.text) for s in platform.sent()] == [
        ("m-2", "recorded answer 2"),
        ("m-1", "recorded answer 1"),
    ]
    assert server.requests == [] and inbox_statuses(config) == ["done", "done"]
