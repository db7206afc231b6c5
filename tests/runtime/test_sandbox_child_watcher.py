"""`watch_children_with_pidfds`: a process whose sandboxes all start from the main thread's loop
(the quickstart) waits for its children through pidfds, not a thread per child, and every
command still reports its exit status and output. Run in a fresh interpreter: the watcher is
the process's, and the test suite's other loops must keep the default."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import asyncio, json, threading
    from runtime.sandbox import watch_children_with_pidfds
    from runtime.sandbox.process import run_process_tree

    installed = watch_children_with_pidfds()
    most_threads = 0

    async def one(i):
        global most_threads
        result = await run_process_tree(
            ["/bin/sh", "-c", f"sleep 0.2; echo out{i}; exit {i % 3}"], command="c", cwd="/",
            env={}, timeout_s=10, max_output_bytes=1000,
        )
        most_threads = max(most_threads, threading.active_count())
        return result.exit_code, result.output.strip()

    async def main():
        global most_threads
        tasks = [asyncio.create_task(one(i)) for i in range(20)]
        await asyncio.sleep(0.1)  # all twenty are running now
        most_threads = max(most_threads, threading.active_count())
        return await asyncio.gather(*tasks)

    results = asyncio.run(main())
    watcher = type(asyncio.get_child_watcher()).__name__ if installed else None
    print(json.dumps({"installed": installed, "watcher": watcher, "threads": most_threads, "results": results}))
    """
)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12 waits through pidfds by default")
def test_children_are_waited_for_without_a_thread_each() -> None:
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True
    )
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["installed"] and report["watcher"] == "PidfdChildWatcher"
    # Twenty children ran at once; the default watcher would hold a thread for each.
    assert report["threads"] <= 2
    assert report["results"] == [[i % 3, f"out{i}"] for i in range(20)]
