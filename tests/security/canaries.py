"""Canary secrets, planted where a temper daemon keeps its own, and the user that owns them.

Each canary is a unique random string whose only copies are the place it was planted (and the
host process that planted it): finding one anywhere else (a command's output, a workspace, a
snapshot, a trajectory) means a sandbox let it out.

    canaries = plant_canaries(root, owner=(uid, gid))

plants, under `root` (the daemon's home is `root/home`):
- secrets_file  /etc/temper/secrets.toml, mode 600, as `temper daemon install` leaves it, when
                this process may create /etc/temper (root, and no /etc/temper yet); else the
                user install's ~/.config/temper/secrets.toml
- config        ~/.config/temper/config.toml
- database      ~/.local/share/temper/temper.db, a SQLite database holding the canary
- home          ~/.ssh/id_ed25519 and ~/.bash_history
- environment   OPENAI_API_KEY and TEMPER_TELEGRAM__BOT_TOKEN of the process that starts sandboxes
- argv          on that process's command line

Every file is owned by `owner`, mode 600, in directories only `owner` may enter: the daemon's
user can read them, nobody else. `remove_canaries` takes away what `plant_canaries` put outside
`root`. `daemon_user()` is the unprivileged user a root test process runs the sandboxes as.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import sqlite3
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

SYSTEM_SECRETS = Path("/etc/temper/secrets.toml")
DAEMON_USER = "temper-redteam"
ENV_NAMES = ("OPENAI_API_KEY", "TEMPER_TELEGRAM__BOT_TOKEN")


@dataclass(frozen=True)
class Canaries:
    values: dict[str, str]  # where it was planted (secrets_file, config, ...) -> the canary
    home: str
    secrets_file: str
    config_file: str
    database: str
    home_files: tuple[str, ...]
    planted_system_file: bool  # whether secrets_file is SYSTEM_SECRETS, made by plant_canaries

    @property
    def environment(self) -> dict[str, str]:
        """The variables to give the process that starts sandboxes."""
        return {name: self.values["environment"] for name in ENV_NAMES}

    @property
    def argv(self) -> str:
        return self.values["argv"]

    def found_in(self, data: str | bytes) -> set[str]:
        """The names of the canaries that appear in `data`."""
        text = data.decode("latin-1") if isinstance(data, bytes) else data
        return {where for where, value in self.values.items() if value in text}

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Canaries:
        fields = json.loads(text)
        return cls(**{**fields, "home_files": tuple(fields["home_files"])})


def plant_canaries(root: Path, owner: tuple[int, int] | None = None) -> Canaries:
    """Plant one canary of each kind under `root` (and maybe /etc/temper), owned by `owner`."""
    uid, gid = owner or (os.getuid(), os.getgid())
    values = {
        where: f"CANARY-{where}-{secrets.token_hex(12)}"
        for where in ("secrets_file", "config", "database", "home", "environment", "argv")
    }
    home = root / "home"
    config_dir, data_dir = home / ".config" / "temper", home / ".local" / "share" / "temper"
    for directory in (home, config_dir.parent, config_dir, data_dir.parents[1], data_dir.parent, data_dir):
        directory.mkdir(mode=0o700)
        os.chown(directory, uid, gid)
    system = _may_plant_system_file()
    secrets_file = SYSTEM_SECRETS if system else config_dir / "secrets.toml"
    if system:
        SYSTEM_SECRETS.parent.mkdir(mode=0o750)  # as `temper daemon install` makes it
        os.chown(SYSTEM_SECRETS.parent, 0, gid)
    _write(secrets_file, f'[telegram]\nbot_token = "{values["secrets_file"]}"\n', uid, gid)
    config_file = config_dir / "config.toml"
    _write(config_file, f'[slack]\nsigning_secret = "{values["config"]}"\n', uid, gid)
    database = data_dir / "temper.db"
    with sqlite3.connect(database) as connection:
        connection.execute("create table secrets(name text, value text)")
        connection.execute("insert into secrets values ('api_key', ?)", (values["database"],))
    connection.close()
    _own(database, uid, gid)
    (home / ".ssh").mkdir(mode=0o700)
    os.chown(home / ".ssh", uid, gid)
    home_files = (home / ".ssh" / "id_ed25519", home / ".bash_history")
    _write(home_files[0], f"-----BEGIN OPENSSH PRIVATE KEY-----\n{values['home']}\n", uid, gid)
    _write(home_files[1], f"export GITHUB_TOKEN={values['home']}\n", uid, gid)
    return Canaries(
        values,
        str(home),
        str(secrets_file),
        str(config_file),
        str(database),
        tuple(map(str, home_files)),
        system,
    )


def remove_canaries(canaries: Canaries) -> None:
    """Remove what was planted outside the battery's root (the system secrets file)."""
    if canaries.planted_system_file:
        shutil.rmtree(SYSTEM_SECRETS.parent, ignore_errors=True)


def daemon_user() -> tuple[int, int]:
    """The uid/gid of an unprivileged user to run sandboxes as, made with useradd if needed
    (a system user without a home or a login shell); `nobody` where useradd is missing."""
    try:
        entry = pwd.getpwnam(DAEMON_USER)
    except KeyError:
        useradd = shutil.which("useradd")
        if useradd is None:
            nobody = pwd.getpwnam("nobody")
            return nobody.pw_uid, nobody.pw_gid
        subprocess.run(
            [useradd, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
             "--shell", "/usr/sbin/nologin", DAEMON_USER],
            check=True, capture_output=True,
        )  # fmt: skip
        entry = pwd.getpwnam(DAEMON_USER)
    return entry.pw_uid, entry.pw_gid


def _may_plant_system_file() -> bool:
    return os.geteuid() == 0 and not os.path.lexists(SYSTEM_SECRETS.parent)


def _write(path: Path, text: str, uid: int, gid: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as stream:
        stream.write(text)
    _own(path, uid, gid)


def _own(path: Path, uid: int, gid: int) -> None:
    os.chown(path, uid, gid)
    path.chmod(0o600)
