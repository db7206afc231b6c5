"""A night of learning: the day's work becomes practice, and a better executor takes over.

    collect   the day's executor episodes -> replayable tasks (learner/tasks/episodes.py): the
              newest of them held out (the time split), the rest trained on; exclusions counted
    distill   the planner's successful executor episodes -> supervised targets: the adapter that
              training starts from imitates them first (SFT on the LoRA adapter, learner/sft.py)
    cycle     replay -> rows -> GRPO -> the gate on two held-out sets -> promote (learner/cycle.py):
              the user's held-out tasks, where the candidate must be better, and the synthetic
              suite's held-out families, where it must not be worse than a margin
    measure   the held-out success per kind of task (runtime/executor/kinds.py) of the version in
              service after the night, stored for routing (memory/routing.py): the executor takes
              a kind only where it has proven itself

Training tasks, drawn in this order of preference (CycleSettings.source_weights): the day's
episode tasks, imported task folders, the synthetic suite.

Everything lands in `work_dir` (the cycle's own directory): a night cut short runs again from
its checkpoints; a distilled adapter already there is reused rather than trained again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from learner.cycle import CycleResult, CycleSettings, run_cycle
from learner.evaluation import Evaluation
from learner.gate import HeldoutResult, success_by_kind
from learner.policy import LoraSettings
from learner.sft import SFTExample, SFTSettings, sft
from learner.tasks import Task
from learner.tasks.episodes import Harvest, HarvestSettings, distillation_examples, harvest_episodes
from learner.train import StepMetrics
from learner.versions import ExecutorVersions
from memory import BASE_VERSION, MemoryStore
from runtime.executor import LocalModel, TaskKinds


@dataclass(frozen=True)
class NightSettings:
    cycle: CycleSettings = field(default_factory=CycleSettings)
    harvest: HarvestSettings = field(default_factory=HarvestSettings)
    # Distillation trains the LoRA adapter GRPO will start from; at least this many examples.
    distill: SFTSettings = field(
        default_factory=lambda: SFTSettings(lora=LoraSettings(rank=8), max_epochs=4, learning_rate=2e-3)
    )
    min_distill_examples: int = 4
    distill_lookback_s: float = 7 * 86_400.0  # the planner's episodes of the last week


@dataclass
class NightResult:
    harvest: Harvest
    distilled: int  # supervised examples the adapter imitated before GRPO (0: none)
    cycle: CycleResult
    competence: dict[str, tuple[float, int]]  # kind -> (held-out success, tasks) of the version in service
    serving: str  # the version in service after the night (BASE_VERSION: the base model)

    def lines(self) -> list[str]:
        decision = self.cycle.decision
        outcome = f"promoted {self.cycle.version.name}" if self.cycle.version else "refused"
        kinds = ", ".join(f"{kind} {rate:.2f}" for kind, (rate, _) in sorted(self.competence.items()))
        return [
            self.harvest.line(),
            f"distillation: {self.distilled} examples from the planner's episodes"
            if self.distilled
            else "distillation: none (no successful planner episodes to imitate)",
            f"gate: {outcome} (mean {decision.mean_current:.2f} -> {decision.mean_candidate:.2f})",
            f"in service: {self.serving}; held-out success by kind: {kinds or 'none measured'}",
        ]


async def run_night(
    model_dir: Path,
    store: MemoryStore,
    work_dir: Path,
    versions: ExecutorVersions,
    settings: NightSettings,
    *,
    since: float,
    snapshot_dir: Path,
    extra_train: Sequence[Task] = (),
    regression: Sequence[Task] = (),
    say: Callable[[str], object] = lambda _line: None,
    on_phase: Callable[[str], None] | None = None,
    on_iteration: Callable[[int, float, StepMetrics], None] | None = None,
) -> NightResult:
    """One night on the episodes recorded since `since`. `extra_train`: imported and synthetic
    training tasks; `regression`: the frozen suite's held-out tasks."""
    phase = on_phase or (lambda _name: None)
    phase("collect")
    harvest = await harvest_episodes(
        store, snapshot_dir, since=since, settings=settings.harvest, backend=settings.cycle.replay.sandbox
    )
    say(harvest.line())
    user_train = [task for task in harvest.tasks if task.split == "train"]
    user_heldout = [task for task in harvest.tasks if task.split == "heldout"]
    current = versions.current()
    start_adapter = None if current is None else current.directory

    phase("distill")
    examples = distillation_examples(store, since=since - settings.distill_lookback_s)
    train_from = None
    if len(examples) >= settings.min_distill_examples:
        train_from = await asyncio.to_thread(
            _distill, model_dir, start_adapter, examples, settings.distill, work_dir
        )
        say(f"distillation: the adapter imitated {len(examples)} planner replies")
    result = await run_cycle(
        model_dir, [*user_train, *extra_train], user_heldout, store, work_dir, versions, settings.cycle,
        on_iteration=on_iteration, start_adapter=start_adapter,
        regression=regression, train_from=train_from, on_phase=phase,
    )  # fmt: skip

    phase("measure")
    serving = result.version.name if result.version else (current.name if current else BASE_VERSION)
    served = _served_results(result)
    tasks = {task.id: task for task in [*user_heldout, *regression]}
    kinds = TaskKinds(store)
    competence = success_by_kind(served, lambda task_id: kinds.kind_of(tasks[task_id].instruction))
    store.routing.record_competence(serving, competence, source="gate")
    return NightResult(harvest, len(examples) if train_from else 0, result, competence, serving)


def _served_results(result: CycleResult) -> list[HeldoutResult]:
    """The held-out results of the executor in service after the gate: the candidate's when it
    was promoted, else the current one's."""
    promoted = result.version is not None
    evaluations: list[Evaluation | None] = [
        result.candidate if promoted else result.current,
        result.regression_candidate if promoted else result.regression_current,
    ]
    return [r for evaluation in evaluations if evaluation is not None for r in evaluation.results]


def _distill(
    model_dir: Path,
    start_adapter: Path | None,
    examples: list[SFTExample],
    settings: SFTSettings,
    work_dir: Path,
) -> Path:
    """Train a LoRA adapter (from the current version's, if any) to imitate `examples`; its
    directory. Reused when this night's directory already has it (a resumed night)."""
    target = work_dir / "distilled"
    if (target / "adapter_config.json").is_file():
        return target
    # From the version in service's adapter weights: the distilled adapter is its next step.
    result = sft(LocalModel.load(model_dir), examples, settings, start_adapter=start_adapter)
    return result.policy.save_adapter(target)
