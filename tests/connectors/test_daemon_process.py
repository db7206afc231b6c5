"""The daemon as a process: killed with SIGKILL while 100 messages are queued and restarted,
every message gets exactly one reply; SIGTERM lets the turn in flight finish; a second signal
stops at once. The "platform" is the loopback channel's SQLite file, which outlives the daemon
the way Telegram's servers outlive a bot (tests/fakes/loopback_channel.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

from memory import MemoryStore
from tests.fakes.daemon_setup import base_config
from tests.fakes.loopback_channel import LoopbackPlatform
from tests.fakes.openai_server import FakeOpenAI

REPO = Path(__file__).resolve().parents[2]
DAEMON = textwrap.dedent(
    """
    import asyncio, logging, sys
    from pathlib import Path
    from connectors.config import load_config
    from connectors.daemon import Daemon, DaemonSettings
    from connectors.daemon.dispatch import DispatchSettings
    from tests.fakes.loopback_channel import LoopbackChannel

    config, platform, drain = load_config(Path(sys.argv[1]), environ={}), Path(sys.argv[2]), float(sys.argv[3])
    logging.basicConfig(level=logging.INFO)
    settings = DaemonSettings(drain_timeout_s=drain, status_interval_s=0.2, dispatch=DispatchSettings(poll_s=0.05))
    channels = {"loopback": lambda _config: LoopbackChannel(platform)}
    sys.exit(asyncio.run(Daemon(config, channels=channels, settings=settings, environ={}).serve()))
    """
)


@pytest.fixture
def config_file(tmp_path: Path, server: FakeOpenAI) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(base_config(tmp_path / "data", server.base_url))
    return path


@pytest.fixture
def platform(tmp_path: Path) -> LoopbackPlatform:
    return LoopbackPlatform(tmp_path / "platform.db")


def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "temper.db"


def start(config_file: Path, platform: LoopbackPlatform, drain_s: float = 10.0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", DAEMON, str(config_file), str(platform.path), str(drain_s)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for(
    condition: Callable[[], object], process: subprocess.Popen[str], timeout_s: float = 60.0
) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if process.poll() is not None:
            raise AssertionError(f"the daemon exited ({process.returncode}):\n{process.stdout.read()}")
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"timed out; the daemon said:\n{process.communicate()[0][-4000:]}")
        time.sleep(0.02)


def let_in(tmp_path: Path, *users: str) -> None:
    with MemoryStore.open(db_path(tmp_path)) as store:
        for user in users:
            store.access.grant("loopback", user)


def inbox(tmp_path: Path) -> dict[str, int]:
    with MemoryStore.open(db_path(tmp_path)) as store:
        return dict(store.db.execute("select status, count(*) from inbox group by status").fetchall())


@pytest.mark.slow
def test_killed_mid_way_and_restarted_every_message_gets_exactly_one_reply(
    tmp_path: Path, config_file: Path, platform: LoopbackPlatform, server: FakeOpenAI
) -> None:
    users = [f"u{n}" for n in range(10)]
    let_in(tmp_path, *users)
    for _ in range(300):  # more than 100: turns cut short by the kill ask the model again
        server.enqueue(text="noted", delay=0.02)
    asked = {
        platform.say(users[n % 10], f"message {n}", message_id=f"m-{n:03d}"): users[n % 10]
        for n in range(100)
    }

    first = start(config_file, platform)
    wait_for(lambda: len(platform.sent()) >= 30, first)
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    replied_before = len(platform.sent())
    assert replied_before < 100, "the kill came too late to test anything"

    second = start(config_file, platform)
    wait_for(lambda: len({s.reply_to for s in platform.sent()}) == 100, second)
    second.send_signal(signal.SIGTERM)
    assert second.wait(30) == 0, second.stdout.read()

    sent = platform.sent()
    assert Counter(s.reply_to for s in sent) == Counter(dict.fromkeys(asked, 1))
    assert len({s.key for s in sent}) == 100
    by_chat: dict[str, list[str]] = defaultdict(list)
    for reply in sent:
        by_chat[reply.chat_id].append(reply.reply_to)
    assert all(ids == sorted(ids) for ids in by_chat.values())  # each session answered in order
    assert inbox(tmp_path) == {"done": 100}


def test_sigterm_lets_the_turn_in_flight_finish(
    tmp_path: Path, config_file: Path, platform: LoopbackPlatform, server: FakeOpenAI
) -> None:
    let_in(tmp_path, "ana")
    server.enqueue(text="a slow answer", delay=1.5)
    daemon = start(config_file, platform)
    platform.say("ana", "first")
    wait_for(lambda: server.requests, daemon)  # the turn is in flight
    daemon.send_signal(signal.SIGTERM)
    platform.say("ana", "second")  # arrives while draining: stored, left for the next start
    assert daemon.wait(30) == 0
    output = daemon.stdout.read()
    assert [s.text for s in platform.sent()] == ["a slow answer"], output
    assert len(server.requests) == 1
    assert inbox(tmp_path) == {"done": 1, "pending": 1}


def test_a_second_signal_stops_at_once(
    tmp_path: Path, config_file: Path, platform: LoopbackPlatform, server: FakeOpenAI
) -> None:
    let_in(tmp_path, "ana")
    server.enqueue(text="too late", delay=20)
    daemon = start(config_file, platform, drain_s=60)
    platform.say("ana", "first")
    wait_for(lambda: server.requests, daemon)
    daemon.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    daemon.send_signal(signal.SIGTERM)
    started = time.monotonic()
    assert daemon.wait(15) == 1
    assert time.monotonic() - started < 10
    assert platform.sent() == [] and inbox(tmp_path) == {"pending": 1}  # answered at the next start
