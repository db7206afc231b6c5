"""Promotion and rollback: moving the executor's `current` pointer (versions.py keeps the store).

    version = promote(versions, candidate_dir, VersionMeta(base, base_hash, parent="v3", ...))
    previous = rollback(versions)    # back to the current version's parent

The pointer only says which version the executor should use; runtime's ModelSwitch
(runtime/executor/switch.py) loads it into a backend. Rollback follows the chain of parents: after promoting v1, v2, v3, rollbacks go to v2
and then v1, and a promotion after that names v1 as its parent. Both take the store's lock, so a
nightly promotion and an operator's `temper executor rollback` never interleave.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from learner.versions import ExecutorVersions, Version, VersionError, VersionMeta


def promote(versions: ExecutorVersions, candidate_dir: str | Path, meta: VersionMeta) -> Version:
    """Copy the candidate adapter in as a new version and make it current; the old current stays
    on disk for rollback. Refused when the gate said no, or when the pointer moved away from
    `meta.parent` since the candidate was gated (its comparison would no longer hold)."""
    if meta.gate is not None and not meta.gate.get("promote", False):
        raise VersionError("the gate refused this candidate: it is not promoted")
    with versions.locked():
        current = versions.current_name()
        if meta.parent != current:
            raise VersionError(
                f"the candidate was gated against {_label(meta.parent)}, but the current version "
                f"is now {_label(current)}: gate it again against the current one"
            )
        version = versions.add(candidate_dir, replace(meta, created_at=time.time()))
        versions.move_pointer(version.name, "promote")
    return version


def rollback(versions: ExecutorVersions) -> Version:
    """Point `current` back at the current version's parent and return that version."""
    with versions.locked():
        current = versions.current()
        if current is None:
            raise VersionError("no executor version has been promoted yet: nothing to roll back")
        if current.meta.parent is None:
            raise VersionError(
                f"{current.name} is the first executor version (trained on the base model): "
                "there is no earlier version to roll back to"
            )
        previous = versions.get(current.meta.parent)
        versions.move_pointer(previous.name, "rollback")
    return previous


def _label(version: str | None) -> str:
    return version or "the base model"
