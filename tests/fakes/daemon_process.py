"""`temper daemon` as a child process, pointed at the fake Telegram, Slack and model servers,
for the chaos test and bench/daemon.py.

    folder = write_config(tmp_path, model=openai, telegram=telegram, slack=slack,
                          telegram_users=[7], slack_users=["U0ALICE"], daemon={"concurrency": 8})
    daemon = DaemonProcess(folder)
    daemon.start()                                  # `temper --config ... daemon`, output to a file
    daemon.wait_for(lambda: telegram.sent)          # fails with the daemon's log if it died
    daemon.kill()                                   # SIGKILL;  daemon.stop() is SIGTERM and wait
    daemon.rss_bytes()

The config is a real config.toml with the bot tokens in a private secrets.toml beside it, so the
child reads its settings the way an operator's daemon does. The planner (and the judge, which a
turn without tools never calls) answer from the fake model server; the sandbox is `local` and
the executor off, so a turn is one model call.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.fakes.openai_server import FakeOpenAI
    from tests.fakes.slack_server import FakeSlack
    from tests.fakes.telegram_server import FakeTelegram

REPO = Path(__file__).resolve().parents[2]
CLI = "import sys; from connectors.cli import app; sys.argv[0] = 'temper'; app()"


def write_config(
    folder: Path,
    *,
    model: FakeOpenAI,
    telegram: FakeTelegram | None = None,
    slack: FakeSlack | None = None,
    telegram_users: Iterable[int] = (),
    slack_users: Iterable[str] = (),
    daemon: dict[str, Any] | None = None,
) -> Path:
    """config.toml and secrets.toml in `folder` (the data dir is `folder/data`); the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        f'data_dir = "{folder / "data"}"',
        "[sandbox]",
        'backend = "local"',
        "[executor]",
        "enabled = false",
    ]
    for slot in ("planner", "judge"):
        lines += [
            f"[models.{slot}]",
            'model = "openai/fake"',
            f'api_base = "{model.base_url}"',
            'api_key_env = ""',
        ]
    secrets: list[str] = []
    if telegram is not None:
        lines += ["[telegram]", "enabled = true", f"allowed_users = {list(telegram_users)}"]
        lines += ['mode = "polling"', f'base_url = "{telegram.url}"', "poll_timeout_s = 5"]
        secrets += ["[telegram]", f'bot_token = "{telegram.token}"']
    if slack is not None:
        users = ", ".join(f'"{user}"' for user in slack_users)
        lines += ["[slack]", "enabled = true", f"allowed_users = [{users}]"]
        lines += ['mode = "socket"', f'base_url = "{slack.base_url}"']
        secrets += ["[slack]", f'bot_token = "{slack.bot_token}"', f'app_token = "{slack.app_token}"']
    lines += ["[daemon]", *(f"{key} = {_toml(value)}" for key, value in (daemon or {}).items())]
    (folder / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    secrets_path = folder / "secrets.toml"
    secrets_path.write_text("\n".join(secrets) + "\n", encoding="utf-8")
    secrets_path.chmod(0o600)
    return folder


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f'"{value}"' if isinstance(value, str) else str(value)


class DaemonProcess:
    """One `temper daemon` at a time on `folder`'s config; each start appends to `log_path`."""

    def __init__(self, folder: Path, *, log_level: str = "info", args: Iterable[str] = ()) -> None:
        self.folder = folder
        self.log_path = folder / "daemon.log"
        self.log_level = log_level
        self.args = list(args)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def db_path(self) -> Path:
        return self.folder / "data" / "temper.db"

    def start(self) -> None:
        command = [sys.executable, "-c", CLI, "--config", str(self.folder / "config.toml"), "daemon"]
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [*command, "--log-level", self.log_level, *self.args],
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=log,
            )

    def wait_for(
        self, condition: Callable[[], object], timeout_s: float = 60.0, what: str = "the condition"
    ) -> None:
        """Poll `condition` until true; AssertionError with the log's tail if the daemon exits first
        or `timeout_s` passes."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(
                    f"the daemon exited ({self.process.returncode}) before {what}:\n{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not within {timeout_s} s; the daemon said:\n{self.log_tail()}")
            time.sleep(0.01)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self, timeout_s: float = 30.0) -> int:
        """SIGTERM (drain and stop); the exit code."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout_s)

    def close(self) -> None:
        """Kill a daemon still running (a failed test must not leave one behind)."""
        if self.process is not None and self.process.poll() is None:
            self.kill()

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def rss_bytes(self) -> int:
        """The child's resident memory now (Linux /proc)."""
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS in /proc status")

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else "(no log)"
