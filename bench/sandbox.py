"""Sandbox latency: start+stop and one `true`, per available backend, against a plain subprocess.

Prints `name: value` lines. Ratios compare with a baseline measured in the same run (a bare
`true` through asyncio's subprocess API), because these machines are noisy.

    python bench/sandbox.py [--runs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

# The repo root first: bench/memory.py would otherwise shadow the memory package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runtime.sandbox import BACKENDS, Sandbox, SandboxOptions, available_backends


async def median_ms(action: Callable[[], Awaitable[object]], runs: int) -> float:
    await action()  # warm up (imports, page cache, the engine's first container)
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        await action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


async def plain_true() -> None:
    process = await asyncio.create_subprocess_exec("true")
    await process.wait()


async def measure(backend: type[Sandbox], options: SandboxOptions, runs: int) -> tuple[float, float]:
    """Median start+stop and `true` latencies of one backend, in ms."""

    async def start_stop() -> None:
        sandbox = backend(options)
        await sandbox.start()
        await sandbox.stop()

    start = await median_ms(start_stop, max(3, runs // 3))
    sandbox = backend(options)
    await sandbox.start()
    try:
        run = await median_ms(lambda: sandbox.run("true", timeout_s=30), runs)
    finally:
        await sandbox.stop()
    return start, run


async def main(runs: int) -> None:
    options = SandboxOptions()
    baseline = await median_ms(plain_true, runs)
    print(f"baseline.subprocess_true_ms: {baseline:.2f}")
    for status in await available_backends(options):
        if not status.available:
            print(f"{status.name}.available: no ({status.detail})")
            continue
        start, run = await measure(BACKENDS[status.name], options, runs)
        print(f"{status.name}.start_stop_ms: {start:.2f}")
        print(f"{status.name}.run_true_ms: {run:.2f}")
        print(f"{status.name}.run_true_vs_subprocess: {run / baseline:.1f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    asyncio.run(main(parser.parse_args().runs))
