"""Whether a sandbox test may skip: locally, a backend that cannot run here skips with its
probe's reason; under CI (the CI variable set, as .ci/run does) it fails, because CI must run
the sandbox and red-team tests on every isolating backend, not pass by skipping them."""

from __future__ import annotations

import os

import pytest

from runtime.sandbox import BackendStatus

CI_HINT = "CI runs every sandbox backend: install bubblewrap, start Docker (.ci/docker-up)"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(status: BackendStatus) -> None:
    """Return if the backend works here; else skip (locally) or fail (in CI), saying why."""
    if status.available:
        return
    reason = f"{status.name} sandbox unavailable: {status.detail}"
    if in_ci():
        pytest.fail(f"{reason} ({CI_HINT})", pytrace=False)
    pytest.skip(reason)
