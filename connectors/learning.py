"""One learning cycle for the configured local executor: `temper learn --now` and the daemon's nightly job.

The executor being trained is `[executor] model_dir` (backend "local") plus its current
version's adapter (`<data_dir>/executor/versions`). Training tasks: the synthetic suite's
training families and the task folders imported with `temper tasks import`; the gate uses the
synthetic suite's held-out families. A cycle works in `<data_dir>/learner/cycles/<started>/`;
one interrupted (Ctrl-C, a crash) resumes from its checkpoint when `temper learn --now` runs
again within the same day.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from connectors.config import Config


class LearnerSetupError(Exception):
    """The config does not name an executor the learner can train."""


async def nightly_cycle(config: Config, store: object) -> str:
    """The daemon's scheduled job: one cycle within the night's budget; its one-line summary."""
    return (await run_learning_cycle(config, minutes=120.0, say=lambda _line: None)).splitlines()[0]


async def run_learning_cycle(
    config: Config,
    *,
    minutes: float,
    say: Callable[[str], object],
    iterations: int = 500,
    per_family: int = 8,
) -> str:
    import torch

    from connectors.redaction import open_memory
    from learner import ExecutorVersions, import_tasks, report_cycle, synthetic_suite
    from learner.cycle import CycleSettings, run_cycle

    settings = config.executor
    if settings.backend != "local" or settings.model_dir is None:
        raise LearnerSetupError(
            'temper learn trains a local executor model: set [executor] backend = "local" and '
            "model_dir (e.g. a model from `temper quickstart`, or any Hugging Face causal LM directory)"
        )
    torch.set_num_threads(1)
    day = time.strftime("%Y%m%d")
    tasks = synthetic_suite(seed=int(day), per_family=per_family)
    imported_dir = config.data_dir / "tasks"
    if imported_dir.is_dir():
        tasks += [task for task in import_tasks(imported_dir, split="train").tasks if not task.needs_docker]
    train = [t for t in tasks if t.split == "train"]
    heldout = [t for t in tasks if t.split == "heldout"]
    versions = ExecutorVersions(config.data_dir)
    current = versions.current()
    work_dir = _cycle_dir(config.data_dir, day)
    say(
        f"cycle in {work_dir}: {len(train)} training tasks, {len(heldout)} held-out, starting from {current.name if current else 'the base model'}"
    )
    # The configured secrets redact the replays' trajectories: an episode that printed one is
    # marked, and never becomes a training row (the report counts it).
    with open_memory(config) as store:
        result = await run_cycle(
            Path(settings.model_dir), train, heldout, store, work_dir, versions,
            CycleSettings(iterations=iterations, seed=int(day), deadline=time.time() + minutes * 60),
            on_iteration=lambda i, reward, m: say(f"iteration {i}: train reward {reward:.2f}; {m.line()}"),
            start_adapter=None if current is None else current.directory,
        )  # fmt: skip
    report = report_cycle(
        config.data_dir,
        result,
        cycle=len(versions.list_versions()) + 1,
        model=settings.model_dir,
        tasks=len(train),
        previous=None if current is None else current.name,
    )
    (work_dir / "done").write_text(report.text + "\n", encoding="utf-8")
    return report.text


def _cycle_dir(data_dir: Path, day: str) -> Path:
    """Today's unfinished cycle directory (to resume), else a new one."""
    root = data_dir / "learner" / "cycles"
    for existing in sorted(root.glob(f"{day}-*"), reverse=True):
        if not (existing / "done").exists():
            return existing
    directory = root / time.strftime(f"{day}-%H%M%S")
    directory.mkdir(parents=True, exist_ok=True)
    return directory
