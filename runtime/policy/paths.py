"""Where a path in a command points: the workspace, scratch space, a device, or the rest of the
machine, and whether it holds credentials.

Commands run with the workspace as their working directory, so a relative path that does not
climb out with `..` is inside it. `~`, `$HOME` and `${HOME}` are the home directory (written
`~` in messages), `/root` and `/home/NAME` are homes too. A path that starts with a variable the
command does not set, or with a substitution, cannot be placed: it is `UNKNOWN`.

Invariant: `locate` is pure and never raises; its `path` is normalised (no `.`, `..` or `//`)
whenever its place is known.
"""

from __future__ import annotations

import enum
import posixpath
import re
from dataclasses import dataclass

HOME = "/home/~"  # how the home directory is written in normalised paths
UNKNOWN_CWD = "?"  # the working directory after `cd -` or `cd $UNSET`

_STREAMS = frozenset(
    {
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/random",
        "/dev/urandom",
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/tty",
        "/dev/ptmx",
    }
)
_STREAM_PREFIXES = ("/dev/fd/", "/dev/pts/", "/proc/self/fd/", "/dev/tcp/", "/dev/udp/")
_DEVICE = re.compile(
    r"^/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|md\d|dm-|loop\d|sr\d|disk/|mapper/"
    r"|root$|mem$|kmem$|port$)"
)
_SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")
_GLOB = re.compile(r"[*?\[]")
_EVERY_ENTRY = re.compile(r"\.?[*?]+(\.[*?]+)?")  # *, .*, *.*
_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")
INFINITE_SOURCES = frozenset({"/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"})

# Credential files, relative to a home directory; a trailing "/" means the whole directory.
_HOME_SECRETS = (
    ".ssh/",
    ".aws/",
    ".azure/",
    ".config/gcloud/",
    ".kube/config",
    ".docker/config.json",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".gnupg/",
    ".password-store/",
    ".vault-token",
    ".config/gh/hosts.yml",
    ".bash_history",
    ".zsh_history",
)
# temper's own config, secrets and database: the user install (platformdirs) and the system
# install (`temper daemon install`). The sandbox hides them; this asks before a command tries.
_HOME_TEMPER = (".config/temper/", ".local/share/temper/")
_ABSOLUTE_TEMPER = ("/etc/temper/", "/var/lib/temper/")
_ABSOLUTE_SECRETS = (
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/sudoers",
    "/etc/ssh/ssh_host_",
    "/run/secrets/",
    "/var/run/secrets/",
)
_PUBLIC_IN_SSH = re.compile(r"(\.pub|known_hosts[^/]*)$")
_ENVIRON = re.compile(r"^/proc/[^/]+/environ$")
_PRIVATE_KEY = re.compile(r"(^|/)id_(rsa|dsa|ecdsa|ed25519)(_sk)?$")
_DOTENV = re.compile(r"(^|/)\.env(\.[\w.-]+)?$")


class Place(enum.Enum):
    WORKSPACE = "workspace"
    SCRATCH = "scratch"  # /tmp and friends
    STREAM = "stream"  # /dev/null, /dev/stdout, /dev/fd/N, /dev/zero: not files on a disk
    DEVICE = "device"  # a disk or memory device
    CRITICAL = "critical"  # /, a top-level directory, /usr/X, a home directory, or a glob of one
    OUTSIDE = "outside"  # anything else outside the workspace
    UNKNOWN = "unknown"  # starts with an unset variable or a substitution


@dataclass(frozen=True)
class Location:
    place: Place
    path: str  # normalised; home written as ~; relative to the workspace for WORKSPACE

    @property
    def shown(self) -> str:
        if self.path == HOME or self.path.startswith(HOME + "/"):
            return "~" + self.path[len(HOME) :]
        return self.path


def expand(word: str, env: dict[str, str]) -> str:
    """`word` with `$HOME`/`~` written as HOME and variables the command set replaced."""

    def known(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name == "HOME":
            return HOME
        return env.get(name, match.group(0))

    word = _VARIABLE.sub(known, word)
    if word == "~" or word.startswith("~/"):
        return HOME + word[1:]
    if word.startswith("~"):  # ~user
        return "/home/" + word[1:]
    return word


def locate(word: str, *, cwd: str | None, workdir: str | None, env: dict[str, str]) -> Location:
    """Where `word`, a path argument of a command run in directory `cwd`, points.

    `cwd` is None for the workspace, else a normalised absolute path or UNKNOWN_CWD;
    `workdir` is the workspace as commands see it (absolute paths under it are inside).
    """
    path = expand(word, env)
    if path.startswith(("$", "`", "<(", ">(")):
        return Location(Place.UNKNOWN, word)
    if not path.startswith("/"):
        if cwd is None:
            relative = posixpath.normpath(path)
            if relative == ".." or relative.startswith("../"):
                return _climbed_out(relative, workdir)
            return Location(Place.WORKSPACE, relative)
        if cwd == UNKNOWN_CWD:
            return Location(Place.UNKNOWN, word)
        path = f"{cwd}/{path}"
    return _absolute(path, workdir)


def _climbed_out(relative: str, workdir: str | None) -> Location:
    """A relative path that leaves the workspace with `..`: never less than OUTSIDE."""
    if workdir is None:
        return Location(Place.OUTSIDE, relative)
    location = _absolute(f"{workdir}/{relative}", workdir)
    if location.place in (Place.WORKSPACE, Place.SCRATCH):
        return Location(Place.OUTSIDE, location.path)
    return location


def _absolute(path: str, workdir: str | None) -> Location:
    path = posixpath.normpath(path)
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    if workdir:
        base = posixpath.normpath(workdir)
        if path == base or path.startswith(base + "/"):
            return Location(Place.WORKSPACE, posixpath.relpath(path, base))
    return Location(_place(path), path)


def _place(path: str) -> Place:
    if path in _STREAMS or path.startswith(_STREAM_PREFIXES):
        return Place.STREAM
    if _DEVICE.match(path):
        return Place.DEVICE
    if any(path == root or path.startswith(root + "/") for root in _SCRATCH):
        return Place.SCRATCH
    if is_critical(path):
        return Place.CRITICAL
    return Place.OUTSIDE


def is_critical(path: str) -> bool:
    """The root, a top-level directory, /usr/X, /var/lib, a home, or a glob over one of them."""
    parts = [part for part in path.split("/") if part]
    while parts and _EVERY_ENTRY.fullmatch(parts[-1]):
        parts.pop()  # `/*`, `~/.*`: every entry of the directory
    if parts and _GLOB.search(parts[0]):
        return True  # `/u*`, `/*/bin`
    if len(parts) <= 1 or parts == ["root"]:
        return True
    return len(parts) == 2 and (parts[0] in ("home", "usr") or parts == ["var", "lib"])


def is_home(path: str) -> bool:
    parts = [part for part in path.split("/") if part]
    while parts and _EVERY_ENTRY.fullmatch(parts[-1]):
        parts.pop()
    return parts == ["root"] or (len(parts) == 2 and parts[0] == "home")


def credential(location: Location) -> str | None:
    """What secret `location` holds (a short description), or None."""
    if location.place in (Place.WORKSPACE, Place.UNKNOWN, Place.STREAM):
        return None
    path = location.path
    if _ENVIRON.match(path):
        return "a process's environment"
    if _under(path, _ABSOLUTE_TEMPER) or _under(_relative_to_home(path), _HOME_TEMPER):
        return "temper's own config, secrets or data"
    secret_dir = path + "/" in _ABSOLUTE_SECRETS
    if (path.startswith(_ABSOLUTE_SECRETS) or secret_dir) and not path.endswith(".pub"):
        return "system credentials"
    inside_home = _relative_to_home(path)
    if inside_home is not None:
        for secret in _HOME_SECRETS:
            whole = secret.rstrip("/")
            if inside_home == whole or (secret.endswith("/") and inside_home.startswith(secret)):
                if whole == ".ssh" and _PUBLIC_IN_SSH.search(inside_home):
                    return None
                return "credentials"
    if _PRIVATE_KEY.search(path):
        return "a private key"
    if _DOTENV.search(path):
        return "a .env file outside the workspace"
    return None


def _under(path: str | None, directories: tuple[str, ...]) -> bool:
    """Whether `path` is one of `directories` (each ending in "/") or inside one."""
    return path is not None and any(path + "/" == d or path.startswith(d) for d in directories)


def _relative_to_home(path: str) -> str | None:
    parts = [part for part in path.split("/") if part]
    if parts[:1] == ["root"]:
        return "/".join(parts[1:])
    if len(parts) >= 2 and parts[0] == "home":
        return "/".join(parts[2:])
    return None
