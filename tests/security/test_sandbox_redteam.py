"""The red-team battery (battery.py) per isolating backend and through the learner's replays, as
the daemon's non-root user, with canaries in its secrets file, config, database, home,
environment and command line: every attempt contained, no canary read. And a check that the
battery can fail: the unisolated `local` backend lets the canaries out.

Under CI a backend that cannot run fails these tests (tests/sandbox_backends.py); locally they
skip, saying why.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from runtime.sandbox import BackendStatus
from tests.security.battery import BatteryResult, run_battery_as_daemon_user

EVERY_CANARY = {"secrets_file", "config", "database", "home", "environment", "argv"}


def escapes(result: BatteryResult) -> str:
    return "\n".join(f"{r.name}: {r.detail}\n    saw: {r.excerpt!r}" for r in result.escapes)


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_every_escape_attempt_is_contained_and_no_canary_is_read(
    backend: str, require_sandbox: Callable[[str], None]
) -> None:
    require_sandbox(backend)

    result = run_battery_as_daemon_user(backend)

    assert result.attempts >= 30
    assert result.escapes == [], escapes(result)
    assert result.canaries_read == ()
    assert result.contained == result.attempts
    assert f"{backend}_canaries_read: 0" in result.lines()


def test_learner_replays_run_isolated_and_leak_nothing(
    sandbox_statuses: dict[str, BackendStatus], require_sandbox: Callable[[str], None]
) -> None:
    if not (sandbox_statuses["docker"].available or sandbox_statuses["bwrap"].available):
        require_sandbox("bwrap")  # replays need docker or bwrap: skip (fail in CI) without both

    result = run_battery_as_daemon_user("replay")

    assert result.backend in ("docker", "bwrap"), "a replay with default settings ran unisolated"
    assert result.attempts >= 30
    assert result.escapes == [], escapes(result)
    assert result.canaries_read == ()


def test_the_battery_sees_what_an_unisolated_backend_lets_out() -> None:
    # The same attempts through `local`: the battery is only worth its passes if it can fail.
    reads = ["planted-secrets-file", "config-dir", "database", "home-files", "starter-process", "snapshot"]

    result = run_battery_as_daemon_user("local", only=reads)

    assert set(result.canaries_read) == EVERY_CANARY
    assert {r.name for r in result.escapes} == {*reads, "left-in-workspace"}
