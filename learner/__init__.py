"""temper's learner: replay the day's tasks, train the executor with GRPO on the tokens it
sampled, and promote the result only if it beats the current executor on held-out tasks.

    replay -> build_rows -> GRPOTrainer.step -> gate (decide) -> promote   (learner/cycle.py)

Task sources: `synthetic_suite`, `import_tasks` (terminal-bench layout). A first executor is
warm-started by supervised fine-tuning on reference solutions (`warm_start`).

Modules that need torch (training, warm start, the cycle) load on first use, so `import learner`
and the CLI commands that only read versions stay fast.
"""

from typing import TYPE_CHECKING, Any

from learner.advantages import group_advantages
from learner.evaluation import Evaluation, evaluate
from learner.gate import GateDecision, GateError, GateSettings, HeldoutResult, decide
from learner.promote import promote, rollback
from learner.replay import Attempt, ReplaySettings, replay
from learner.report import CycleSummary, Progress, report_cycle, write_report
from learner.rows import Row, RowBatch, RowSettings, RowStats, build_rows
from learner.tasks import (
    Harvest,
    HarvestSettings,
    Task,
    distillation_examples,
    export_task,
    harvest_episodes,
    import_tasks,
    reference_actions,
    synthetic_suite,
)
from learner.versions import ExecutorVersions, Version, VersionError, VersionMeta, model_hash

if TYPE_CHECKING:  # for type checkers; at run time these load on first use (__getattr__)
    from learner.cycle import CycleResult, CycleSettings, Probe, ProbePoint, run_cycle  # noqa: F401
    from learner.policy import LoraSettings, TrainablePolicy  # noqa: F401
    from learner.sft import SFTExample, SFTSettings, sft  # noqa: F401
    from learner.train import GRPOTrainer, StepMetrics, TrainSettings  # noqa: F401
    from learner.warmstart import WarmStart, WarmStartSettings, warm_start  # noqa: F401


_HEAVY = {
    "CycleResult": "learner.cycle",
    "CycleSettings": "learner.cycle",
    "Probe": "learner.cycle",
    "ProbePoint": "learner.cycle",
    "run_cycle": "learner.cycle",
    "LoraSettings": "learner.policy",
    "TrainablePolicy": "learner.policy",
    "SFTExample": "learner.sft",
    "SFTSettings": "learner.sft",
    "sft": "learner.sft",
    "GRPOTrainer": "learner.train",
    "StepMetrics": "learner.train",
    "TrainSettings": "learner.train",
    "WarmStart": "learner.warmstart",
    "WarmStartSettings": "learner.warmstart",
    "warm_start": "learner.warmstart",
}

__all__ = [
    "Harvest",
    "HarvestSettings",
    "distillation_examples",
    "export_task",
    "harvest_episodes",
    "Attempt",
    "CycleSummary",
    "Evaluation",
    "ExecutorVersions",
    "GateDecision",
    "GateError",
    "GateSettings",
    "HeldoutResult",
    "Progress",
    "ReplaySettings",
    "Row",
    "RowBatch",
    "RowSettings",
    "RowStats",
    "Task",
    "Version",
    "VersionError",
    "VersionMeta",
    "build_rows",
    "decide",
    "evaluate",
    "group_advantages",
    "import_tasks",
    "model_hash",
    "promote",
    "reference_actions",
    "replay",
    "report_cycle",
    "rollback",
    "synthetic_suite",
    "write_report",
    *_HEAVY,
]


def __getattr__(name: str) -> Any:
    if name in _HEAVY:
        import importlib

        return getattr(importlib.import_module(_HEAVY[name]), name)
    raise AttributeError(f"module 'learner' has no attribute {name!r}")
