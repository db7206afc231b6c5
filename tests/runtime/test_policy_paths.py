"""runtime/policy/paths.py: temper's own config, secrets and database count as credentials, in
the user install (~/.config/temper, ~/.local/share/temper) and the system install (/etc/temper,
/var/lib/temper). The sandbox hides them; the policy asks before a command even tries."""

from __future__ import annotations

import pytest

from runtime.policy import assess
from runtime.policy.paths import credential, locate

TEMPER_READS = [
    "cat /etc/temper/secrets.toml",
    "cat /etc/temper/config.toml",
    "grep -r token /etc/temper",
    "tar czf x.tgz /etc/temper",
    "cat /etc/temper/*",
    "sqlite3 /var/lib/temper/temper.db .dump",
    "strings /var/lib/temper/temper.db",
    "cat ~/.config/temper/secrets.toml",
    "cat ~/.config/temper/config.toml",
    "cp ~/.local/share/temper/temper.db .",
    "cat /home/bot/.config/temper/secrets.toml",
    "base64 < /root/.local/share/temper/temper.db",
    "cat ../../etc/temper/secrets.toml",
]


@pytest.mark.parametrize("command", TEMPER_READS)
def test_reading_temper_s_own_files_is_asked_about(command: str) -> None:
    verdict = assess(command, workdir="/workspace")
    assert (verdict.action, verdict.rule) == ("ask", "read-credentials"), verdict
    assert "temper's own config, secrets or data" in verdict.reason


@pytest.mark.parametrize(
    "path",
    ["/etc/temperature", "/var/lib/temper-old", "/home/bot/.config/tempers/x", "/workspace/etc/temper"],
)
def test_neighbours_of_temper_s_directories_are_not_temper_s(path: str) -> None:
    assert credential(locate(path, cwd=None, workdir="/workspace", env={})) is None


def test_naming_temper_s_directory_without_reading_it_is_allowed() -> None:
    assert assess("ls /etc/temper", workdir="/workspace").action == "allow"
