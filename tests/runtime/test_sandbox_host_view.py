"""What of the host a sandbox shows a command: under bwrap an /etc built from an allowlist (no
other host entry, however it is named), and for both isolating backends a clean environment,
even in pid 1's /proc entry, and the everyday tools working with only that."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import AsyncIterator, Callable

import pytest

from runtime.sandbox import BwrapSandbox, Sandbox, SandboxOptions, open_sandbox
from runtime.sandbox.bwrap_sandbox import ETC_ALLOWED, _etc_mounts

pytestmark = pytest.mark.anyio

GENERATED = {"passwd", "group", "hosts"}
SHELL_VARIABLES = {"PWD", "SHLVL", "_", "OLDPWD", "HOSTNAME"}  # set by sh, or docker's own


@pytest.fixture(params=["bwrap", "docker"])
async def isolating(
    request: pytest.FixtureRequest, require_sandbox: Callable[[str], None], sandbox_options: SandboxOptions
) -> AsyncIterator[Sandbox]:
    require_sandbox(request.param)
    options = SandboxOptions(limits=sandbox_options.limits, env={"TASK_VARIABLE": "1"})
    async with open_sandbox(request.param, options=options) as sandbox:
        yield sandbox


async def test_bwrap_s_etc_holds_only_the_allowlist(require_sandbox: Callable[[str], None]) -> None:
    require_sandbox("bwrap")
    async with open_sandbox("bwrap") as sandbox:
        listing = await sandbox.run("cd /etc && find . -mindepth 1 -maxdepth 2 | cut -c3-", 10)
        written = await sandbox.run("touch /etc/planted; echo $?", 10)
    entries = set(listing.output.split())
    allowed = [*ETC_ALLOWED, *GENERATED]
    strays = {
        e for e in entries if not any(fnmatch.fnmatch(e.split("/")[0], a.split("/")[0]) for a in allowed)
    }
    assert strays == set(), f"host /etc entries outside the allowlist: {sorted(strays)}"
    assert not any(e.startswith(("temper", "shadow", "sudoers", "ssh", "ssl/private")) for e in entries)
    assert {e for e in entries if e.startswith("ssl/")} <= {"ssl/certs", "ssl/openssl.cnf"}
    assert GENERATED <= entries and "Read-only file system" in written.output


async def test_commands_see_only_the_sandbox_s_environment(isolating: Sandbox) -> None:
    result = await isolating.run(r"env; echo ---; tr '\0' '\n' < /proc/1/environ", 10)
    own, pid1 = result.output.split("---\n")
    names = {line.split("=", 1)[0] for line in own.splitlines() if "=" in line}
    assert names - SHELL_VARIABLES == {"PATH", "HOME", "TMPDIR", "LANG", "TERM", "TASK_VARIABLE"}
    pid1_names = {line.split("=", 1)[0] for line in pid1.splitlines() if "=" in line}
    assert pid1_names - SHELL_VARIABLES <= {"PATH", "HOME", "TMPDIR", "LANG", "TERM", "TASK_VARIABLE"}


async def test_everyday_tools_work_with_what_is_mounted(isolating: Sandbox) -> None:
    script = (
        "printf 'b 2\\na 1\\n' > f; sort f | head -1; awk '{s+=$2} END {print s}' f; sed s/a/z/ f | grep z; "
        "wc -l < f; find . -name f; tar czf t.tgz f && tar tzf t.tgz; "
        "python3 -c 'import json, sqlite3, ssl; print(json.dumps(bool(ssl.create_default_context())))'"
    )
    result = await isolating.run(script, 30)
    assert result.ok, result.output
    assert result.output.splitlines() == ["a 1", "3", "z 1", "2", "./f", "f", "true"]


async def test_git_works_under_bwrap(require_sandbox: Callable[[str], None]) -> None:
    require_sandbox("bwrap")
    async with BwrapSandbox() as sandbox:
        result = await sandbox.run(
            "git init -q r && cd r && echo x > x && git add x && "
            "git -c user.name=a -c user.email=a@b commit -qm m && git log --format=%s",
            30,
        )
    assert result.ok and result.output == "m\n", result.output


def test_the_etc_allowlist_is_read_again_when_the_host_etc_changes(tmp_path) -> None:
    """bwrap's /etc arguments are kept between sandboxes, but an allowed entry added to or
    removed from the host /etc (or /etc/ssl) shows up in the next sandbox's arguments."""
    host = tmp_path / "etc"
    (host / "ssl").mkdir(parents=True)
    (host / "shells").write_text("/bin/sh\n")
    (host / "secrets.toml").write_text("token = 'x'\n")
    generated = tmp_path / "generated"

    def bound() -> set[str]:
        argv = _etc_mounts(generated, network=False, host_etc=host)
        return {
            argv[i + 2] for i, a in enumerate(argv) if a == "--ro-bind" and argv[i + 1].startswith(str(host))
        }

    def changed(directory, stamp: int) -> None:  # an old mtime, as a host /etc has: cacheable
        os.utime(directory, ns=(stamp, stamp))

    changed(host, 1)
    changed(host / "ssl", 1)
    assert bound() == {"/etc/shells"}
    assert bound() == {"/etc/shells"}  # from the cache
    (host / "os-release").write_text("ID=test\n")
    changed(host, 2)
    assert bound() == {"/etc/shells", "/etc/os-release"}
    (host / "ssl" / "certs").mkdir()
    changed(host / "ssl", 2)
    assert bound() == {"/etc/shells", "/etc/os-release", "/etc/ssl/certs"}
    (host / "shells").unlink()
    changed(host, 3)
    assert bound() == {"/etc/os-release", "/etc/ssl/certs"}
    (host / "shells").write_text("/bin/sh\n")  # changed just now: read again, whatever the mtime
    assert bound() == {"/etc/shells", "/etc/os-release", "/etc/ssl/certs"}
