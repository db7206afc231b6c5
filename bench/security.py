"""What an attacker gets from inside temper's sandboxes, and what the redactor lets through.

    python bench/security.py                 # bwrap and docker, where each runs; the redactor
    python bench/security.py --backends bwrap --only read

Sandboxes: the red-team battery of tests/security (canary secrets planted where a daemon keeps
its own: secrets file, config, environment, database, home; then every escape and exfiltration
attempt, run as an unprivileged daemon user) against each backend. The baseline, in the same
run, is the battery's read attempts with no isolation (`local`): they must read the canaries,
or the battery proves nothing (a positive control).

Redaction: the corpus of tests/security/secret_corpus.py on its held-out seed (fake secrets in
commands, outputs, JSON, env files and URLs; ordinary terminal output and code). The baseline is
redacting the configured secrets' exact values only, which is all a redactor without a detector
could do with a secret it was never told about: nothing.

Lines are `name: value`: `<backend>_attempts`, `<backend>_contained`, `<backend>_canaries_read`,
`secrets_planted`, `secrets_caught`, `false_positive_lines`, `ordinary_lines`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.security, from a checkout

from memory import redact
from runtime.sandbox import available_backends
from tests.security.battery import run_battery_as_daemon_user
from tests.security.secret_corpus import HELDOUT_SEED, leaked, measure_redaction, plant_secrets

BACKENDS = ("bwrap", "docker")


def bench_sandboxes(backends: list[str], only: list[str] | None) -> None:
    status = {s.name: s for s in asyncio.run(available_backends())}
    control = run_battery_as_daemon_user("local", only=["read"])
    print(f"local_canaries_read: {len(control.canaries_read)} (baseline: no isolation, read attempts)")
    if not control.canaries_read:
        print("baseline read no canary: the battery cannot tell a sandbox from none here")
    for backend in backends:
        if not status[backend].available:
            print(f"{backend}: unavailable ({status[backend].detail})")
            continue
        result = run_battery_as_daemon_user(backend, only=only)
        print(f"{backend}_attempts: {result.attempts}")
        print(f"{backend}_contained: {result.contained}")
        print(f"{backend}_canaries_read: {len(result.canaries_read)}")
        print(f"{backend}_seconds: {result.seconds:.1f}")
        for escape in result.escapes:
            print(f"{backend} escape: {escape.name}: {escape.detail}")


def bench_redaction(seed: int) -> None:
    figures = measure_redaction(seed)
    for name, value in figures.items():
        print(f"{name}: {value}")
    planted = plant_secrets(seed)
    # The baseline: no detector, only the configured values (none of the planted ones).
    exact_only = sum(1 for p in planted if not leaked(p.secret, p.text, p.text))
    print(f"secrets_caught_without_detector: {exact_only} (baseline)")
    print(f"caught / planted: {figures['secrets_caught'] / figures['secrets_planted']:.3f}")
    print(
        f"false positives / ordinary lines: {figures['false_positive_lines'] / figures['ordinary_lines']:.4f}"
    )
    texts = [p.text for p in planted]
    started = time.perf_counter()
    for text in texts:
        redact(text)
    per_text = (time.perf_counter() - started) / len(texts)
    started = time.perf_counter()
    for text in texts:
        text.replace("not-a-secret", "")
    baseline = (time.perf_counter() - started) / len(texts)
    print(f"redact per text: {per_text * 1e6:.0f} us (str.replace baseline {baseline * 1e6:.2f} us)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backends", nargs="*", default=list(BACKENDS), choices=BACKENDS)
    parser.add_argument("--only", nargs="*", help="attempt kinds or names (default: all)")
    parser.add_argument("--seed", type=int, default=HELDOUT_SEED, help="the corpus seed (default: held out)")
    parser.add_argument("--no-sandboxes", action="store_true", help="the redactor only")
    args = parser.parse_args()
    if not args.no_sandboxes:
        bench_sandboxes(args.backends, args.only)
    bench_redaction(args.seed)


if __name__ == "__main__":
    main()
