"""systemd: the unit `temper daemon install` writes (deploy/temper.service is its system form
with default paths), and the readiness notifications of `Type=notify`.

Hardening is what bubblewrap still works under. bwrap needs user, pid and network namespaces and
must mount a fresh /proc; the kernel refuses that mount when the service's /proc has anything
mounted over parts of it. So these stay out: RestrictNamespaces= and PrivateUsers= (no
namespaces), ProtectKernelTunables=, ProtectKernelLogs=, ProtectProc= and ProtectHostname=
(mounts over /proc), SystemCallFilter=@system-service (it forbids mount), and
CapabilityBoundingSet= (bwrap uses capabilities inside its own user namespace).
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping
from pathlib import Path

log = logging.getLogger("temper.systemd")

UNIT_NAME = "temper.service"
SYSTEM_UNIT_DIR = Path("/etc/systemd/system")
SYSTEM_CONFIG = Path("/etc/temper/config.toml")
SYSTEM_DATA_DIR = Path("/var/lib/temper")
STOP_MARGIN_S = 30  # past the drain timeout: sandboxes put away, the store closed

_SYSTEM_HARDENING = """\
# Hardening compatible with the bubblewrap sandbox (see connectors/daemon/systemd.py for what is left out).
NoNewPrivileges=true
PrivateTmp=true
PrivateDevices=true
ProtectSystem=strict
ProtectHome=true
ProtectKernelModules=true
ProtectControlGroups=true
ProtectClock=true
RestrictSUIDSGID=true
RestrictRealtime=true
LockPersonality=true
SystemCallArchitectures=native
UMask=0077
"""


def render_unit(
    *, exec_start: str, config_path: Path, system: bool, user: str = "temper", drain_timeout_s: float = 30.0
) -> str:
    """The unit text: a system service running as `user` with its state in /var/lib/temper, or
    (system=False) a user service for `systemctl --user`."""
    lines = [
        "[Unit]",
        "Description=temper agent daemon (chat connectors, schedule, learner)",
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=notify",
        "NotifyAccess=main",
        f"ExecStart={exec_start} --config {config_path} daemon",
        "Restart=on-failure",
        "RestartSec=5s",
        "# SIGTERM drains the turns in flight (bounded by the drain timeout); then systemd kills.",
        "KillMode=mixed",
        f"TimeoutStopSec={int(drain_timeout_s) + STOP_MARGIN_S}",
        "Environment=LITELLM_LOCAL_MODEL_COST_MAP=True",
    ]
    if system:
        lines += [
            f"User={user}",
            f"Group={user}",
            "StateDirectory=temper",
            "StateDirectoryMode=0700",
            "ConfigurationDirectory=temper",
            f"Environment=TEMPER_DATA_DIR={SYSTEM_DATA_DIR}",
            "# For the docker sandbox, let the service use the engine: SupplementaryGroups=docker",
            _SYSTEM_HARDENING.rstrip("\n"),
            "",
            "[Install]",
            "WantedBy=multi-user.target",
        ]
    else:
        lines += ["NoNewPrivileges=true", "UMask=0077", "", "[Install]", "WantedBy=default.target"]
    return "\n".join(lines) + "\n"


def install_commands(unit_path: Path, *, system: bool, user: str = "temper") -> list[str]:
    if system:
        return [
            f"id {user} >/dev/null 2>&1 || useradd --system --home {SYSTEM_DATA_DIR} --shell /usr/sbin/nologin {user}",
            f"install -d -m 0750 -g {user} {SYSTEM_CONFIG.parent}   # config.toml, and secrets.toml (chown {user}, chmod 600)",
            "systemctl daemon-reload",
            "systemctl enable --now temper",
            "journalctl -u temper -f",
        ]
    return [
        "systemctl --user daemon-reload",
        "systemctl --user enable --now temper",
        f"loginctl enable-linger {os.environ.get('USER', '$USER')}   # keep it running while you are logged out",
        "journalctl --user -u temper -f",
    ]


def notify(state: str, environ: Mapping[str, str] | None = None) -> bool:
    """Tell systemd `state` ("READY=1", "STOPPING=1", "STATUS=..."); False outside systemd."""
    address = (os.environ if environ is None else environ).get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(state.encode())
    except OSError as error:
        log.warning("could not notify systemd (%s): %s", state, error)
        return False
    return True
