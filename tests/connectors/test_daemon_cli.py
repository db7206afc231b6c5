"""`temper daemon install`, `temper status` and `temper pairing ...` through the real CLI, and
the systemd pieces: the unit written, the unit in deploy/, readiness sent to a real socket."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from connectors.cli import app
from connectors.daemon.status import STATUS_FILE, DaemonReport, write_report
from connectors.daemon.supervisor import ChannelState
from connectors.daemon.systemd import SYSTEM_CONFIG, notify, render_unit
from memory import MemoryStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in [n for n in os.environ if n.startswith("TEMPER_")]:
        monkeypatch.delenv(name)
    (tmp_path / "config.toml").write_text(f'data_dir = "{tmp_path / "data"}"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return tmp_path


def temper(home: Path, *args: str) -> Result:
    return CliRunner().invoke(app, ["--config", str(home / "config.toml"), *args])


def store(home: Path) -> MemoryStore:
    return MemoryStore.open(home / "data" / "temper.db")


def test_an_executor_model_dir_without_a_model_stops_the_daemon_with_one_line(home: Path) -> None:
    missing = home / "models" / "executor"
    config = home / "config.toml"
    config.write_text(config.read_text() + f'[executor]\nbackend = "local"\nmodel_dir = "{missing}"\n')

    result = CliRunner(env={"OPENAI_API_KEY": "sk-test-not-used"}).invoke(
        app, ["--config", str(config), "daemon"]
    )

    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    assert (
        f"temper: the executor model cannot be loaded: {missing} is not a directory: give a model directory"
        in result.stderr
    )
    assert "Traceback" not in result.stderr


# --- the systemd unit ---------------------------------------------------------------------------


def test_install_writes_a_user_unit_and_says_how_to_enable_it(home: Path) -> None:
    done = temper(home, "daemon", "install")
    assert done.exit_code == 0, done.output
    unit = (home / "xdg" / "systemd" / "user" / "temper.service").read_text()
    assert f"--config {home / 'config.toml'} daemon" in unit
    assert "Type=notify" in unit and "Restart=on-failure" in unit and "WantedBy=default.target" in unit
    assert "User=" not in unit and "NoNewPrivileges=true" in unit
    assert "systemctl --user enable --now temper" in done.stdout

    again = temper(home, "daemon", "install")
    assert again.exit_code == 1 and "--force replaces it" in again.output
    assert temper(home, "daemon", "install", "--force").exit_code == 0


def test_install_system_writes_a_hardened_unit_for_a_dedicated_user(home: Path) -> None:
    done = temper(home, "daemon", "install", "--system", "--user", "bot", "--unit-dir", str(home / "units"))
    assert done.exit_code == 0, done.output
    unit = (home / "units" / "temper.service").read_text()
    for line in ("User=bot", "StateDirectory=temper", "ProtectSystem=strict", "NoNewPrivileges=true",
                 "--config /etc/temper/config.toml daemon", "WantedBy=multi-user.target"):  # fmt: skip
        assert line in unit
    for breaks_bwrap in (
        "RestrictNamespaces",
        "PrivateUsers",
        "ProtectKernelTunables",
        "ProtectProc",
        "SystemCallFilter",
    ):
        assert f"\n{breaks_bwrap}=" not in unit
    assert "useradd --system" in done.stdout and "systemctl enable --now temper" in done.stdout


def test_the_unit_in_deploy_is_the_system_unit_with_default_paths() -> None:
    expected = render_unit(exec_start="/usr/local/bin/temper", config_path=SYSTEM_CONFIG, system=True)
    assert (REPO / "deploy" / "temper.service").read_text() == expected


def test_readiness_reaches_the_notify_socket(tmp_path: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(str(tmp_path / "notify"))
        assert notify("READY=1", {"NOTIFY_SOCKET": str(tmp_path / "notify")}) is True
        assert listener.recv(64) == b"READY=1"
    assert notify("READY=1", {}) is False  # not under systemd


# --- status ------------------------------------------------------------------------------------


def test_status_without_a_daemon(home: Path) -> None:
    done = temper(home, "status")
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[0] == "daemon:    not running (it has never run with this data dir)"
    assert "queue:     0 pending, 0 failed" in done.stdout
    assert "learner:   no learner installed" in done.stdout and "executor:  none" in done.stdout


def test_status_reads_the_daemons_report(home: Path) -> None:
    (home / "data").mkdir()
    now = time.time()
    report = DaemonReport(
        pid=os.getpid(), state="running", started_at=now - 3700, updated_at=now - 2,
        channels=[ChannelState("telegram", "running", now, 0, None), ChannelState("slack", "backoff", now, 3, "socket closed")],
        queue={"pending": 2, "failed": 0, "in_flight": 1, "approvals_open": 0},
        jobs={"memory-maintenance": {"schedule": "0 4 * * 0", "next_run": "2026-12-06T04:00:00",
                                     "last": {"started_at": now - 60, "finished_at": now - 59, "ok": True, "detail": "4 steps in 0.20 s"}}},
    )  # fmt: skip
    write_report(home / "data" / STATUS_FILE, report)
    lines = temper(home, "status").stdout.splitlines()
    assert lines[0].startswith(f"daemon:    running (pid {os.getpid()}, up 1 h 1 min")
    assert lines[1].startswith("telegram:  running (since")
    assert lines[2].startswith("slack:     backoff: socket closed (since") and lines[2].endswith(
        "restarts 3)"
    )
    assert (
        lines[3] == "queue:     0 pending, 0 failed, 1 in flight, 0 approvals open"
    )  # pending from the database
    assert "ok: 4 steps in 0.20 s; next 2026-12-06 04:00 (0 4 * * 0)" in lines[4]

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    report.pid = int(dead.stdout)
    write_report(home / "data" / STATUS_FILE, report)
    assert temper(home, "status").stdout.startswith("daemon:    not running (last seen ")


# --- pairing ------------------------------------------------------------------------------------


def test_pairing_list_approve_grant_revoke(home: Path) -> None:
    with store(home) as opened:
        code = opened.access.issue_code(
            "telegram", "123", "123", "Ana", ttl_s=3600, per_user_per_day=3, max_pending=20
        )
    listed = temper(home, "pairing", "list")
    assert f"  {code.display}  telegram:123 (Ana)  expires " in listed.stdout
    assert "let in: nobody yet" in listed.stdout

    wrong = temper(home, "pairing", "approve", "ZZZZ-ZZZZ")
    assert wrong.exit_code == 1 and "ZZZZ-ZZZZ is not a pending code" in wrong.output
    approved = temper(home, "pairing", "approve", code.display)
    assert approved.exit_code == 0 and "let in telegram:123 (Ana)" in approved.stdout

    assert temper(home, "pairing", "grant", "slack:U012AB3CD").exit_code == 0
    listed = temper(home, "pairing", "list").stdout
    assert "pending codes: none" in listed
    assert "telegram:123 (Ana)  by pairing on" in listed and "slack:U012AB3CD  by operator on" in listed

    assert temper(home, "pairing", "revoke", "telegram:123").stdout == "revoked telegram:123\n"
    again = temper(home, "pairing", "revoke", "telegram:123")
    assert again.exit_code == 1 and "was not let in" in again.output
    malformed = temper(home, "pairing", "revoke", "telegram")
    assert malformed.exit_code == 2 and "PLATFORM:USER_ID" in malformed.output
    with store(home) as opened:
        assert [(g.platform, g.platform_user_id) for g in opened.access.grants()] == [("slack", "U012AB3CD")]
