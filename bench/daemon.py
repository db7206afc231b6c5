"""The daemon end to end: messages per second through each connector, the latency the daemon
adds, and its resident memory over 10,000 messages from 1,000 people.

`temper daemon` runs as a child process (the real CLI, reading a config.toml and a secrets.toml),
so the CPU and memory measured are its own; the fake Telegram, Slack and model servers run in
this process (tests/fakes). The model answers at once. Figures:

- `<platform>_messages_per_s`: a burst of `--burst` messages from `--burst-users` people queued
  at once; messages divided by the seconds until the last reply reached the fake platform.
- `<platform>_cpu_ms_per_message`: the CPU time (user + system) the daemon, or the bare bot,
  spent on that burst per message. Throughput on these shared 2-core machines follows whatever
  else runs; CPU per message moves much less, so it is the figure to compare between runs.
- `<platform>_added_p50_ms` / `_p99_ms`: one message at a time, from the fake platform queuing
  the update to it receiving the reply, minus the mean time spent inside the model server per
  call (the model's share, which the daemon does not add).
- the baseline, measured in the same run: a bare bot in a child process, the same client
  libraries (python-telegram-bot's `Bot` long polling, or slack_sdk's Socket Mode client) and the
  openai SDK, with no inbox, no agent and no memory. `_vs_bare_bot` is the ratio.
- `rss_*`: the daemon's resident memory after warm-up, and after `--rss-messages` more messages
  from `--rss-users` people through Telegram (sent in waves of 500, each answered before the
  next); `rss_growth_mb` is the difference. SQLite's page cache (up to 64 MiB, memory/database.py)
  fills as the database grows, so growth tracks `database_mb_with_wal` until that cap.

    python bench/daemon.py [--burst 1000] [--burst-users 200] [--latency 200] [--rss-messages 10000]

The smallest run (tests/bench/test_smoke.py):

    python bench/daemon.py --warmup 5 --burst 10 --burst-users 5 --latency 5 --rss-messages 10 --rss-users 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tests.fakes import slack_wire  # noqa: E402
from tests.fakes.daemon_process import DaemonProcess, write_config  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI  # noqa: E402
from tests.fakes.slack_server import FakeSlack  # noqa: E402
from tests.fakes.telegram_server import FakeTelegram  # noqa: E402

WAVE = 500
CONCURRENCY = 4  # the daemon's default ([daemon] concurrency); the bare bots answer as many at once
FIRST_TELEGRAM_USER = 100_000

BARE_TELEGRAM_BOT = """
import asyncio, sys
import openai
from telegram import Bot, ReplyParameters

async def main(api, model_base, token, concurrency):
    bot = Bot(token, base_url=api + "/bot")
    model = openai.AsyncOpenAI(base_url=model_base, api_key="bare", max_retries=0)
    running, gate = set(), asyncio.Semaphore(int(concurrency))

    async def answer(message):
        async with gate:
            reply = await model.chat.completions.create(model="fake", messages=[{"role": "user", "content": message.text}])
            await bot.send_message(message.chat.id, reply.choices[0].message.content,
                                   reply_parameters=ReplyParameters(message.message_id))

    async with bot:
        offset = None
        while True:
            for update in await bot.get_updates(offset=offset, timeout=5):
                offset = update.update_id + 1
                task = asyncio.create_task(answer(update.message))
                running.add(task)
                task.add_done_callback(running.discard)

asyncio.run(main(*sys.argv[1:5]))
"""

BARE_SLACK_BOT = """
import asyncio, sys
import openai
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

async def main(api, model_base, bot_token, app_token, concurrency):
    web = AsyncWebClient(token=bot_token, base_url=api)
    model = openai.AsyncOpenAI(base_url=model_base, api_key="bare", max_retries=0)
    client = SocketModeClient(app_token=app_token, web_client=web)
    gate = asyncio.Semaphore(int(concurrency))

    async def on_request(client, request):
        await client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))
        event = request.payload.get("event") or {}
        if event.get("type") == "message":
            async with gate:
                reply = await model.chat.completions.create(model="fake", messages=[{"role": "user", "content": event["text"]}])
                await web.chat_postMessage(channel=event["channel"], text=reply.choices[0].message.content)

    client.socket_mode_request_listeners.append(on_request)
    await client.connect()
    await asyncio.Event().wait()

asyncio.run(main(*sys.argv[1:6]))
"""


# The fake platforms, noting when each message was queued and each reply arrived ----------------


class TimedTelegram(FakeTelegram):
    def __init__(self) -> None:
        super().__init__()
        self.queued_at: dict[tuple[int, int], float] = {}  # (chat, message id) -> perf_counter
        self.replied_at: dict[tuple[int, int], float] = {}  # (chat, answered message id) -> ...
        self.replied = threading.Condition()

    def push(self, update: dict[str, Any]) -> dict[str, Any]:
        now = time.perf_counter()
        message = update.get("message")
        if message is not None:
            self.queued_at[(message["chat"]["id"], message["message_id"])] = now
        return super().push(update)

    def _api_sendMessage(self, params: dict[str, Any]) -> Any:
        result = super()._api_sendMessage(params)
        now = time.perf_counter()
        answered = (params.get("reply_parameters") or {}).get("message_id")
        with self.replied:
            self.replied_at[(int(params["chat_id"]), answered)] = now
            self.replied.notify_all()
        return result


class TimedSlack(FakeSlack):
    def __init__(self) -> None:
        super().__init__()
        self.replied_at: list[tuple[str, float]] = []  # (channel, perf_counter) per chat.postMessage
        self.replied = threading.Condition()

    def _post_message(self, params: dict[str, Any]) -> dict[str, Any]:
        answer = super()._post_message(params)
        with self.replied:
            self.replied_at.append((params["channel"], time.perf_counter()))
            self.replied.notify_all()
        return answer


def wait(condition: threading.Condition, done: Callable[[], bool], timeout_s: float = 120.0) -> None:
    with condition:
        if not condition.wait_for(done, timeout_s):
            raise TimeoutError(f"no replies within {timeout_s} s")


async def wait_async(
    condition: threading.Condition, done: Callable[[], bool], timeout_s: float = 120.0
) -> None:
    await asyncio.to_thread(wait, condition, done, timeout_s)


# Traffic ----------------------------------------------------------------------------------------


def telegram_user(n: int) -> int:
    return FIRST_TELEGRAM_USER + n


def slack_user(n: int) -> str:
    return f"U{n:06d}"


async def telegram_latency(telegram: TimedTelegram, model: FakeOpenAI, count: int) -> list[float]:
    """Seconds from queued to answered, one message at a time, minus the model's share."""
    samples = []
    for n in range(count):
        inside = model.time_inside_s
        chat = telegram_user(n % 50)
        message = telegram.message(f"how is the weather today, {n}?", chat_id=chat)["message"]
        key = (chat, message["message_id"])
        await wait_async(telegram.replied, lambda key=key: key in telegram.replied_at)
        samples.append(telegram.replied_at[key] - telegram.queued_at[key] - (model.time_inside_s - inside))
    return samples


async def slack_latency(slack: TimedSlack, model: FakeOpenAI, count: int) -> list[float]:
    samples = []
    for n in range(count):
        inside = model.time_inside_s
        replies = len(slack.replied_at)
        queued = time.perf_counter()
        event = slack_wire.message(
            f"how is the weather today, {n}?", channel=f"D{n % 50}", user=slack_user(n % 50)
        )
        await slack.push_event(event)
        await wait_async(slack.replied, lambda replies=replies: len(slack.replied_at) > replies)
        samples.append(slack.replied_at[replies][1] - queued - (model.time_inside_s - inside))
    return samples


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def timed_burst(pid: int, burst: Callable[[], Awaitable[float]], messages: int) -> tuple[float, float]:
    """Messages per second through `burst`, and CPU milliseconds per message of process `pid`."""
    before = cpu_seconds(pid)
    seconds = await burst()
    return messages / seconds, (cpu_seconds(pid) - before) * 1000 / messages


async def telegram_burst(telegram: TimedTelegram, messages: int, users: int, start: int = 0) -> float:
    """Queue `messages` from `users` people at once (the n-th from person (start + n) % users);
    seconds until every one is answered."""
    before = len(telegram.replied_at)
    started = time.perf_counter()
    for n in range(start, start + messages):
        telegram.message(f"remind me about item {n}", chat_id=telegram_user(n % users))
    await wait_async(telegram.replied, lambda: len(telegram.replied_at) >= before + messages)
    return time.perf_counter() - started


async def slack_burst(slack: TimedSlack, messages: int, users: int) -> float:
    before = len(slack.replied_at)
    started = time.perf_counter()
    for n in range(messages):
        person = n % users
        await slack.push_event(
            slack_wire.message(f"remind me about item {n}", channel=f"D{person}", user=slack_user(person))
        )
    await wait_async(slack.replied, lambda: len(slack.replied_at) >= before + messages)
    return time.perf_counter() - started


# Runs -------------------------------------------------------------------------------------------


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


async def measure_daemon(args: argparse.Namespace, folder: Path, model: FakeOpenAI) -> dict[str, float]:
    figures: dict[str, float] = {}
    async with TimedSlack() as slack:
        with TimedTelegram() as telegram:
            telegram_users = [telegram_user(n) for n in range(max(args.rss_users, args.burst_users, 50))]
            slack_users = [slack_user(n) for n in range(max(args.burst_users, 50))]
            write_config(
                folder,
                model=model,
                telegram=telegram,
                slack=slack,
                telegram_users=telegram_users,
                slack_users=slack_users,
            )
            daemon = DaemonProcess(folder, log_level="warning")
            daemon.start()
            try:
                up = lambda: telegram.offsets and slack.live_sockets()  # noqa: E731
                await asyncio.to_thread(daemon.wait_for, up, 60.0, "both channels up")
                await telegram_burst(telegram, args.warmup, 50)  # imports, caches, connections
                await slack_burst(slack, args.warmup, 50)
                for platform, samples in (
                    ("telegram", await telegram_latency(telegram, model, args.latency)),
                    ("slack", await slack_latency(slack, model, args.latency)),
                ):
                    figures[f"{platform}_latency"] = statistics.median(samples)
                    figures[f"{platform}_latency_p99"] = percentile(samples, 0.99)
                pid = daemon.pid
                figures["telegram_rate"], figures["telegram_cpu"] = await timed_burst(
                    pid, lambda: telegram_burst(telegram, args.burst, args.burst_users), args.burst
                )
                figures["slack_rate"], figures["slack_cpu"] = await timed_burst(
                    pid, lambda: slack_burst(slack, args.burst, args.burst_users), args.burst
                )
                figures["rss_start"] = daemon.rss_bytes()
                for wave in range(0, args.rss_messages, WAVE):
                    await telegram_burst(
                        telegram, min(WAVE, args.rss_messages - wave), args.rss_users, start=wave
                    )
                    if wave + WAVE == args.rss_messages // 2:
                        figures["rss_half"] = daemon.rss_bytes()
                figures["rss_end"] = daemon.rss_bytes()
                figures["database"] = (
                    daemon.db_path.stat().st_size + Path(f"{daemon.db_path}-wal").stat().st_size
                )
                if daemon.stop() != 0:
                    raise RuntimeError(f"the daemon did not stop cleanly:\n{daemon.log_tail()}")
            finally:
                daemon.close()
    return figures


def bare_bot(script: str, log: Path, *argv: str) -> subprocess.Popen[bytes]:
    """A bare bot as a child process, answering `CONCURRENCY` messages at once like the daemon."""
    with open(log, "ab") as output:
        command = [sys.executable, "-c", script, *argv, str(CONCURRENCY)]
        return subprocess.Popen(command, cwd=ROOT, stdout=output, stderr=output)


async def measure_bare_bots(args: argparse.Namespace, folder: Path, model: FakeOpenAI) -> dict[str, float]:
    figures: dict[str, float] = {}
    log = folder / "bare-bots.log"
    with TimedTelegram() as telegram:
        bot = bare_bot(BARE_TELEGRAM_BOT, log, telegram.url, model.base_url, telegram.token)
        try:
            await telegram_burst(telegram, args.warmup, 50)
            figures["telegram_latency"] = statistics.median(
                await telegram_latency(telegram, model, args.latency)
            )
            figures["telegram_rate"], figures["telegram_cpu"] = await timed_burst(
                bot.pid, lambda: telegram_burst(telegram, args.burst, args.burst_users), args.burst
            )
        finally:
            bot.kill()
            bot.wait()
    async with TimedSlack() as slack:
        bot = bare_bot(BARE_SLACK_BOT, log, slack.base_url, model.base_url, slack.bot_token, slack.app_token)
        try:
            await slack.wait_for(lambda: slack.live_sockets() > 0, timeout=60)
            await slack_burst(slack, args.warmup, 50)
            figures["slack_latency"] = statistics.median(await slack_latency(slack, model, args.latency))
            figures["slack_rate"], figures["slack_cpu"] = await timed_burst(
                bot.pid, lambda: slack_burst(slack, args.burst, args.burst_users), args.burst
            )
        finally:
            bot.kill()
            bot.wait()
    return figures


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=100, help="messages per platform before measuring")
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--burst-users", type=int, default=200)
    parser.add_argument("--latency", type=int, default=200)
    parser.add_argument("--rss-messages", type=int, default=10_000)
    parser.add_argument("--rss-users", type=int, default=1_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as model:
        calls = 2 * (args.warmup + args.latency + args.burst) + args.rss_messages
        for _ in range(2 * calls):  # the daemon, then the bare bots
            model.enqueue(text="Sure, noted.")
        daemon = await measure_daemon(args, Path(tmp), model)
        bare = await measure_bare_bots(args, Path(tmp), model)
    print("daemon_run_as: child process (temper daemon), fakes in the benchmark process")
    print(f"cpu_count: {os.cpu_count()}")
    for platform in ("telegram", "slack"):
        rate, latency = daemon[f"{platform}_rate"], daemon[f"{platform}_latency"]
        print(f"{platform}_messages_per_s: {rate:.1f}")
        print(f"{platform}_bare_bot_messages_per_s: {bare[f'{platform}_rate']:.1f}")
        print(f"{platform}_messages_per_s_vs_bare_bot: {rate / bare[f'{platform}_rate']:.2f}")
        print(f"{platform}_cpu_ms_per_message: {daemon[f'{platform}_cpu']:.2f}")
        print(f"{platform}_bare_bot_cpu_ms_per_message: {bare[f'{platform}_cpu']:.2f}")
        print(f"{platform}_added_p50_ms: {ms(latency)}")
        print(f"{platform}_added_p99_ms: {ms(daemon[f'{platform}_latency_p99'])}")
        print(f"{platform}_bare_bot_p50_ms: {ms(bare[f'{platform}_latency'])}")
        print(f"{platform}_added_p50_vs_bare_bot: {latency / bare[f'{platform}_latency']:.2f}")
    mb = 1 << 20
    print(f"rss_mb_after_warmup: {daemon['rss_start'] / mb:.1f}")
    if "rss_half" in daemon:
        print(f"rss_mb_after_{args.rss_messages // 2}_messages: {daemon['rss_half'] / mb:.1f}")
    print(
        f"rss_mb_after_{args.rss_messages}_messages_from_{args.rss_users}_users: {daemon['rss_end'] / mb:.1f}"
    )
    print(f"rss_growth_mb: {(daemon['rss_end'] - daemon['rss_start']) / mb:.1f}")
    print(f"database_mb_with_wal: {daemon['database'] / mb:.1f}")


if __name__ == "__main__":
    asyncio.run(main())
