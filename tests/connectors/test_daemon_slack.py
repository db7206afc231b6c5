"""The daemon with the Slack channel the config describes, against the fake Slack
(tests/fakes/slack_server.py): a conversation, an approval by Block Kit button and a thumbs-down
landing on its episode over Socket Mode; in HTTP mode, forged, replayed and malformed requests
refused while the daemon goes on answering. The channel is built by the daemon from `[slack]`
(connectors/daemon/channels.py), so these also check that wiring. Plus the `[daemon]` settings.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from connectors.config import Config, load_config
from connectors.daemon import Daemon, DaemonSettings
from memory import MemoryStore
from tests.fakes import slack_wire
from tests.fakes.daemon_setup import base_config, until
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.slack_server import FakeSlack, post_signed

pytestmark = pytest.mark.anyio

SECRET_READ = "cat ~/.ssh/temper_test_absent"
ALICE, DM = "U0ALICE", "D0DM"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


def slack_config(tmp_path: Path, server: FakeOpenAI, slack: FakeSlack, slack_table: str = "") -> Config:
    path = tmp_path / "config.toml"
    path.write_text(
        base_config(tmp_path / "data", server.base_url)
        + f"[daemon]\ndrain_timeout_s = 5\napproval_timeout_s = 30\n"
        f'[slack]\nenabled = true\nallowed_users = ["{ALICE}"]\nbase_url = "{slack.base_url}"\n{slack_table}'
    )
    secrets = {
        "TEMPER_SLACK__BOT_TOKEN": slack.bot_token,
        "TEMPER_SLACK__APP_TOKEN": slack.app_token,
        "TEMPER_SLACK__SIGNING_SECRET": slack.signing_secret,
    }
    return load_config(path, environ=secrets)


async def serving(config: Config) -> tuple[Daemon, asyncio.Task[int]]:
    daemon = Daemon(config, environ={})  # the channels and the settings come from the config
    task = asyncio.create_task(daemon.serve())
    await until(
        lambda: daemon.supervisors.get("slack") is not None and daemon.supervisors["slack"].state == "running"
    )
    return daemon, task


async def test_a_slack_conversation_with_an_approval_and_a_reaction(
    tmp_path: Path, server: FakeOpenAI, slack: FakeSlack
) -> None:
    server.enqueue(text="Hello Alice!")
    server.enqueue(tool_calls=[{"name": "shell", "arguments": {"command": SECRET_READ}}])
    server.enqueue(text="Ran it.")
    config = slack_config(tmp_path, server, slack)
    daemon, task = await serving(config)
    try:
        await slack.push_event(slack_wire.message("hi", channel=DM, user=ALICE))
        await until(lambda: slack.posted)
        hello = slack.posted[0]
        assert (hello["channel"], hello["text"], hello["thread_ts"]) == (DM, "Hello Alice!", None)

        await slack.push_event(slack_wire.message("show my key", channel=DM, user=ALICE))
        await until(lambda: len(slack.posted) == 2)
        prompt = slack.posted[1]
        assert SECRET_READ in str(prompt["blocks"])
        await slack.push_interactive(slack_wire.button_press(prompt, "temper_approval_yes", user=ALICE))
        await until(lambda: len(slack.posted) == 3)
        assert slack.posted[2]["text"] == "Ran it."
        assert "operator declined" not in server.requests[2]["messages"][-1]["content"]
        await until(lambda: slack.updated)  # the prompt now says who chose what
        assert "yes" in slack.updated[0]["text"]

        await slack.push_event(slack_wire.reaction_added("-1", channel=DM, ts=hello["ts"], user=ALICE))
        await until(lambda: _rewards(config)[0] is not None)
    finally:
        daemon.should_exit = True
        assert await task == 0
    assert _rewards(config) == [0.0, None]


async def test_http_mode_refuses_forged_replayed_and_malformed_requests_and_keeps_answering(
    tmp_path: Path, server: FakeOpenAI, slack: FakeSlack
) -> None:
    server.enqueue(text="First answer.")
    server.enqueue(text="Still here.")
    config = slack_config(tmp_path, server, slack, 'mode = "http"\nlisten_port = 0\n')
    daemon, task = await serving(config)
    try:
        channel: Any = daemon.supervisors["slack"].channel
        url, secret = channel.listen_url, slack.signing_secret

        def signed(text: str) -> dict[str, Any]:
            return slack_wire.event_callback(slack_wire.message(text, channel=DM, user=ALICE))

        assert (await post_signed(url, signed("first"), secret))[0] == 200
        await until(lambda: len(slack.posted) == 1)

        refused = [
            await post_signed(url, signed("forged"), "not-the-signing-secret"),
            await post_signed(url, signed("replayed"), secret, timestamp=1_000_000_000),
            await post_signed(url, signed("unsigned"), secret, headers={"X-Slack-Signature": ""}),
            await post_signed(url, "{not json", secret),
            await post_signed(url, "x" * (2 << 20), secret),
        ]
        assert [status for status, _ in refused] == [401, 401, 401, 400, 413]

        assert (await post_signed(url, signed("second"), secret))[0] == 200
        await until(lambda: len(slack.posted) == 2)
    finally:
        daemon.should_exit = True
        assert await task == 0
    assert [post["text"] for post in slack.posted] == ["First answer.", "Still here."]
    assert len(server.requests) == 2  # nothing refused reached the model
    with MemoryStore.open(config.memory.db_path) as store:
        texts = [
            row[0] for row in store.db.execute("select content from messages where role = 'user' order by id")
        ]
    assert texts == ["first", "second"]


class SlackWithSlowAuth(FakeSlack):
    """Answers the second auth.test half a second late, as a slow network might: the one Bolt
    would make for the first event if the channel left authorisation to it."""

    auth_tests = 0

    async def _api(self, request: web.Request) -> web.Response:
        if request.match_info["method"] == "auth.test":
            self.auth_tests += 1
            if self.auth_tests == 2:
                await asyncio.sleep(0.5)
        return await super()._api(request)


async def test_messages_that_reach_a_fresh_slack_connection_keep_their_order(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    server.enqueue(text="one")
    server.enqueue(text="two")
    async with SlackWithSlowAuth() as slack:
        config = slack_config(tmp_path, server, slack)
        daemon, task = await serving(config)
        try:
            await slack.push_event(slack_wire.message("first", channel=DM, user=ALICE))
            await slack.push_event(slack_wire.message("second", channel=DM, user=ALICE))
            await until(lambda: len(slack.posted) == 2)
        finally:
            daemon.should_exit = True
            assert await task == 0
    with MemoryStore.open(config.memory.db_path) as store:
        texts = [
            row[0] for row in store.db.execute("select content from messages where role = 'user' order by id")
        ]
    assert texts == ["first", "second"]


def test_daemon_settings_come_from_the_config_and_the_flags_win(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        "[daemon]\ndrain_timeout_s = 12\nconcurrency = 2\napproval_timeout_s = 60\npairing_code_ttl_s = 600\n"
        'learner_schedule = "@daily"\nmaintenance_schedule = "15 5 * * 6"\ninbox_prune_schedule = "0 * * * *"\n'
        "inbox_retention_days = 7\n"
    )
    config = load_config(path, environ={})

    settings = DaemonSettings.from_config(config)
    assert (settings.drain_timeout_s, settings.dispatch.concurrency) == (12.0, 2)
    assert (settings.dispatch.approval_timeout_s, settings.pairing.ttl_s) == (60.0, 600.0)
    schedule = settings.schedule
    assert (schedule.learner, schedule.maintenance, schedule.prune) == ("@daily", "15 5 * * 6", "0 * * * *")
    assert schedule.retention_days == 7.0
    flags = DaemonSettings.from_config(config, drain_timeout_s=0.5, concurrency=16)
    assert (flags.drain_timeout_s, flags.dispatch.concurrency) == (0.5, 16)


def _rewards(config: Config) -> list[float | None]:
    with MemoryStore.open(config.memory.db_path) as store:
        return [row[0] for row in store.db.execute("select reward from episodes order by id")]
