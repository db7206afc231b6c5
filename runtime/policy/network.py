"""Rules for data leaving the machine, and code arriving from the network.

- `upload`: curl with a body (`-d`, `--data*`, `-F`, `--form`, `-T`, `--json`), wget with
  `--post-*`/`--body-*`, httpie with a write method or fields, to a host that is not this
  machine (localhost, 127.x, ::1, 0.0.0.0 are this machine; a server a task started there is
  fair game). A plain download (`curl https://example.com`) is not an upload.
- `raw-socket`: nc/ncat/netcat/telnet fed from a file or a pipe, or told to run a program
  (`-e`, `-c`); socat with a pipe, a redirection or an EXEC/SYSTEM/FILE address; any use of
  bash's /dev/tcp and /dev/udp.
- `remote-host`: ssh, scp, sftp, ftp, ssh-copy-id, and rsync with a `host:path` operand.
- `remote-script`: a download piped into a shell or interpreter (`curl ... | sudo bash`), or a
  shell, interpreter, `source` or `eval` given a download by substitution (`bash <(curl ...)`,
  `sh -c "$(wget -O- ...)"`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

from runtime.policy.invocation import Invocation, Script, is_interpreter, read_script, reads_stdin
from runtime.policy.rules import finding
from runtime.policy.verdict import Finding

FETCHERS = frozenset({"curl", "wget", "fetch", "http", "https", "xh", "aria2c"})
_NETCATS = frozenset({"nc", "ncat", "netcat", "telnet"})
_REMOTE_SHELLS = frozenset({"ssh", "scp", "sftp", "ftp", "lftp", "ssh-copy-id", "mosh"})
_CURL_BODY = re.compile(r"^(--data(-\w+)?|--form(-string)?|--upload-file|--json)(=|$)|^-[a-zA-Z]*[dFT]")
_WGET_BODY = re.compile(r"^--(post|body)-(data|file)(=|$)")
_HTTPIE_FIELD = re.compile(r"^[\w.\[\]-]+(:=|==|=|@|:=@|=@)")
_HTTP_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_REMOTE_SPEC = re.compile(r"^([^/\s:@]+@)?[A-Za-z0-9][\w.-]*::?[^:]*$")
_SOCAT_ACTIVE = re.compile(r"^(exec|system|file|open|gopen|create):", re.IGNORECASE)
_VALUE_OPTIONS = frozenset(
    "-d -H -F -T -o -O -X -u -A -e -b -c -x -m -w -K -E -r --data --data-binary --data-raw "
    "--data-urlencode --data-ascii --form --form-string --header --upload-file --output "
    "--request --user --user-agent --referer --cookie --cookie-jar --proxy --max-time "
    "--write-out --config --cert --range --json --connect-timeout --retry --post-data "
    "--post-file --body-data --body-file --output-document --method".split()
)
_LOCAL_HOSTS = re.compile(r"^(localhost|.*\.localhost|127(\.\d+){3}|::1|0\.0\.0\.0|\[::1\])$")


def check(script: Script) -> Iterator[Finding]:
    for invocation in script.invocations:
        yield from _upload(invocation)
        yield from _raw_socket(invocation)
        yield from _remote_host(invocation)
        yield from _substituted_download(invocation)
    yield from _piped_download(script)


def _upload(inv: Invocation) -> Iterator[Finding]:
    if inv.name == "curl":
        sends = any(_CURL_BODY.match(arg) for arg in inv.args)
    elif inv.name == "wget":
        sends = any(_WGET_BODY.match(arg) for arg in inv.args)
    elif inv.name in ("http", "https", "xh"):
        operands = inv.operands()
        sends = (
            inv.has_option("--form", letters="f")
            or any(op.upper() in _HTTP_WRITE_METHODS for op in operands[:1])
            or any(_HTTPIE_FIELD.match(op) for op in operands[1:])
        )
    else:
        return
    host = remote_host(inv)
    if sends and host is not None:
        yield finding("upload", f"{inv.name} sends data to {host}")


def remote_host(inv: Invocation) -> str | None:
    """The first host `inv` talks to that is not this machine ("a remote host" if unnamed)."""
    hosts = []
    for arg in inv.args:
        if "://" in arg:
            hosts.append((urlsplit(arg).hostname or "").lower())
    if not hosts:
        operands = inv.operands(_VALUE_OPTIONS)
        bare = [arg for arg in operands if re.match(r"^[\w.-]+(:\d+)?(/|$)", arg)]
        hosts = [re.split(r"[:/]", arg, maxsplit=1)[0].lower() for arg in bare[:1]]
    for host in hosts or ["a remote host"]:
        if not _LOCAL_HOSTS.match(host):
            return host or "a remote host"
    return None


def _raw_socket(inv: Invocation) -> Iterator[Finding]:
    redirected = [r for r in inv.command.redirects if r.op in ("<", "<<", "<<-", "<<<", "<>")]
    if inv.name in _NETCATS:
        if inv.has_option(letters="ec") or inv.has_option("--exec", "--sh-exec", "--lua-exec"):
            yield finding("raw-socket", f"{inv.name} connects a program to the network")
        elif inv.command.piped_in or redirected:
            yield finding("raw-socket", f"{inv.name} sends data over a raw socket")
    elif inv.name == "socat":
        if inv.command.piped_in or redirected or any(_SOCAT_ACTIVE.match(a) for a in inv.args):
            yield finding("raw-socket", "socat connects a file, a program or a pipe to a socket")
    targets = [r.target for r in inv.command.redirects] + list(inv.args)
    if any(re.match(r"^/dev/(tcp|udp)/", target) for target in targets):
        yield finding("raw-socket", "opens a network connection through /dev/tcp or /dev/udp")


def _remote_host(inv: Invocation) -> Iterator[Finding]:
    if inv.name in _REMOTE_SHELLS:
        if not inv.has_option("-V", "--version"):
            yield finding("remote-host", f"{inv.name} reaches another host")
    elif inv.name == "rsync":
        remote = [op for op in inv.operands(frozenset({"-e", "--rsh"})) if _REMOTE_SPEC.match(op)]
        if remote:
            yield finding("remote-host", f"rsync copies to or from {remote[0]}")


def _substituted_download(inv: Invocation) -> Iterator[Finding]:
    runs_code = is_interpreter(inv.name) or inv.name in ("source", ".", "eval")
    if not runs_code:
        return
    for inner in inv.command.substitutions:
        fetched = [i for i in read_script(inner).invocations if i.name in FETCHERS]
        if fetched:
            host = remote_host(fetched[0]) or "this machine"
            yield finding("remote-script", f"{inv.name} runs a script from {host}")
            return


def _piped_download(script: Script) -> Iterator[Finding]:
    for invocation in script.invocations:
        if not reads_stdin(invocation) or not invocation.command.piped_in:
            continue
        stages = script.pipeline(invocation)
        earlier = stages[: stages.index(invocation)]
        fetched = [stage for stage in earlier if stage.name in FETCHERS]
        if fetched:
            host = remote_host(fetched[0]) or "this machine"
            yield finding("remote-script", f"{invocation.name} runs a script from {host}")
