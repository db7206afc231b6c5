"""The learning cycle as a process of its own, so the daemon keeps answering while it trains.

progress.py  `<data_dir>/learner/progress.json`: phase, iteration, reward, ETA; who is running;
             what `temper status` says about it; `temper learn --cancel`
worker.py    the worker process (`python -m connectors.nightly.worker`), and the same cycle
             in process for `temper learn --now`: lock, progress, cancellation at a step boundary
runner.py    the daemon's side: start the worker niced with its own threads, await it, stop it

The daemon's job and the report to chat are connectors/daemon/nightly.py; the cycle itself is
connectors/learning.py.
"""

__all__: list[str] = []
