"""A night of learning: the day's work becomes practice, and a better executor takes over.

    collect   the day's executor episodes -> replayable tasks (learner/tasks/episodes.py): the
              newest of them held out (the time split), the rest trained on; exclusions counted.
              The user's held-out set keeps earlier nights' held-out tasks too (the newest
              `max_user_heldout`, listed in `heldout_episodes.json` beside the nights'
              directories), checked again: more evidence for the gate, more kinds measured.
              With a planner and `verifiers.calls`, planner-written checks replace the outcome's
              file comparison where they are kept (learner/tasks/written_verifier.py; kept
              scripts in `verifiers/` beside the nights' directories)
    distill   the planner's successful executor episodes -> supervised targets: an adapter
              imitates them (SFT on the LoRA adapter, learner/sft.py), and training starts from
              it only when it does at least as well as the version in service on some of
              tonight's training tasks
    cycle     replay -> rows -> GRPO -> the gate on two held-out sets -> promote (learner/cycle.py):
              the user's held-out tasks, where the candidate must be better, and the synthetic
              suite's held-out families, where it must not be worse than a margin
    measure   the held-out success per kind of task (runtime/executor/kinds.py) of the version in
              service after the night, on the user's held-out tasks, stored for routing
              (memory/routing.py): the executor takes a kind only where it has proven itself on
              what this user asks (the regression suite's instances, made to be hard, stay the
              gate's: a kind they share with the user's would be judged on other people's tasks)

Training tasks, drawn in this order of preference (CycleSettings.source_weights): the day's
episode tasks, imported task folders, the synthetic suite.

Everything lands in `work_dir` (the cycle's own directory): a night cut short runs again from
its checkpoints; a distilled adapter already there is reused rather than trained again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from learner.cycle import CycleResult, CycleSettings, load_model, run_cycle
from learner.durable import write_atomically
from learner.evaluation import Evaluation, evaluate
from learner.gate import HeldoutResult, success_by_kind
from learner.policy import LoraSettings
from learner.replay import ReplaySettings
from learner.sft import SFTExample, SFTSettings, sft
from learner.tasks import Task, VerifierSettings, WrittenVerifiers, write_verifiers
from learner.tasks.episodes import (
    Harvest,
    HarvestSettings,
    distillation_examples,
    harvest_episodes,
    heldout_again,
)
from learner.train import StepMetrics
from learner.versions import ExecutorVersions
from memory import BASE_VERSION, MemoryStore
from runtime.executor import LocalBackend, LocalModel, TaskKinds
from runtime.models import ChatModel


@dataclass(frozen=True)
class NightSettings:
    cycle: CycleSettings = field(default_factory=CycleSettings)
    harvest: HarvestSettings = field(default_factory=HarvestSettings)
    verifiers: VerifierSettings = field(default_factory=VerifierSettings)  # planner-written checks
    # Distillation trains the LoRA adapter GRPO will start from; at least this many examples.
    distill: SFTSettings = field(
        default_factory=lambda: SFTSettings(lora=LoraSettings(rank=8), max_epochs=4, learning_rate=2e-3)
    )
    min_distill_examples: int = 4
    # The distilled adapter is kept only if it does at least as well as the version in service on
    # this many of tonight's training tasks (the planner's replies can teach a format or habits
    # that cost more than they bring: measured, not assumed).
    distill_check_tasks: int = 12
    distill_lookback_s: float = 7 * 86_400.0  # the planner's episodes of the last week
    # The user's held-out set: tonight's newest tasks and those of earlier nights, at most this
    # many (the newest), none ever trained on.
    max_user_heldout: int = 48


@dataclass
class NightResult:
    harvest: Harvest
    distilled: int  # supervised examples the kept adapter imitated before GRPO (0: none kept)
    cycle: CycleResult
    competence: dict[str, tuple[float, int]]  # kind -> (held-out success, tasks) of the version in service
    serving: str  # the version in service after the night (BASE_VERSION: the base model)
    distillation: str = "none: fewer successful planner episodes than the minimum"  # what happened
    verifiers: WrittenVerifiers | None = None  # the planner-written checks (None: off)

    def lines(self) -> list[str]:
        decision = self.cycle.decision
        outcome = f"promoted {self.cycle.version.name}" if self.cycle.version else "refused"
        kinds = ", ".join(f"{kind} {rate:.2f}" for kind, (rate, _) in sorted(self.competence.items()))
        return [
            self.harvest.line(),
            *([self.verifiers.line()] if self.verifiers is not None else []),
            f"distillation: {self.distillation}",
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
    planner: ChatModel | None = None,
) -> NightResult:
    """One night on the episodes recorded since `since`. `extra_train`: imported and synthetic
    training tasks; `regression`: the frozen suite's held-out tasks; `planner`: writes checks for
    the user's tasks (`settings.verifiers`; None: none written)."""
    phase = on_phase or (lambda _name: None)
    phase("collect")
    harvest = await harvest_episodes(
        store, snapshot_dir, since=since, settings=settings.harvest, backend=settings.cycle.replay.sandbox
    )
    say(harvest.line())
    user_train = [task for task in harvest.tasks if task.split == "train"]
    tonight = [task for task in harvest.tasks if task.split == "heldout"]
    ledger = HeldoutLedger(work_dir.parent / HELDOUT_LEDGER)
    new_ids = {_episode_id(task) for task in tonight}
    earlier_ids = [i for i in ledger.read() if i not in new_ids][
        -max(0, settings.max_user_heldout - len(tonight)) :
    ]
    earlier = await heldout_again(
        store, snapshot_dir, earlier_ids, settings=settings.harvest, backend=settings.cycle.replay.sandbox
    )
    written = None
    if settings.verifiers.calls:
        written = await write_verifiers(
            [*user_train, *tonight, *earlier], planner, settings.verifiers,
            backend=settings.cycle.replay.sandbox, saved=work_dir.parent / VERIFIER_DIR,
        )  # fmt: skip
        say(written.line())
        checked = {task.id: task for task in written.tasks}
        user_train, tonight, earlier = (
            [checked[t.id] for t in part] for part in (user_train, tonight, earlier)
        )
    user_heldout = [*earlier, *tonight][-settings.max_user_heldout :]
    if earlier:
        say(f"user's held-out tasks: {len(tonight)} from tonight, {len(earlier)} from earlier nights")
    current = versions.current()
    start_adapter = None if current is None else current.directory

    phase("distill")
    examples = distillation_examples(store, since=since - settings.distill_lookback_s)
    train_from = None
    distillation = (
        f"none: {len(examples)} successful planner replies, fewer than {settings.min_distill_examples}"
    )
    if len(examples) >= settings.min_distill_examples:
        # Loaded as the cycle loads it (device, dtype, threads), and let go before the cycle loads
        # its own: one copy of the weights at a time; every adapter here is one on this model.
        model = load_model(model_dir, settings.cycle)
        distilled = await asyncio.to_thread(
            _distill, model, start_adapter, examples, settings.distill, work_dir
        )
        kept, verdict = await _distillation_helps(
            model, start_adapter, distilled, user_train[: settings.distill_check_tasks],
            store, work_dir, settings,
        )  # fmt: skip
        del model
        train_from = distilled if kept else None
        distillation = f"an adapter imitated {len(examples)} planner replies; {verdict}"
        say(f"distillation: {distillation}")
    result = await run_cycle(
        model_dir, [*user_train, *extra_train], user_heldout, store, work_dir, versions, settings.cycle,
        on_iteration=on_iteration, start_adapter=start_adapter,
        regression=regression, train_from=train_from, on_phase=phase,
    )  # fmt: skip

    phase("measure")
    serving = result.version.name if result.version else (current.name if current else BASE_VERSION)
    tasks = {task.id: task for task in user_heldout}
    served = _served_results(result, tasks)
    kinds = TaskKinds(store)
    competence = success_by_kind(served, lambda task_id: kinds.kind_of(tasks[task_id].instruction))
    store.routing.record_competence(serving, competence, source="gate")
    ledger.write([_episode_id(task) for task in user_heldout])
    return NightResult(
        harvest, len(examples) if train_from else 0, result, competence, serving, distillation, written
    )


async def _distillation_helps(
    model: LocalModel,
    start_adapter: Path | None,
    distilled: Path,
    check: Sequence[Task],
    store: MemoryStore,
    work_dir: Path,
    settings: NightSettings,
) -> tuple[bool, str]:
    """Whether training should start from the distilled adapter: it must do at least as well as
    the version in service on some of tonight's *training* tasks (never the held-out ones). A
    first executor with nothing to check on starts from it; a later one stays as it is."""
    if not check:
        kept = start_adapter is None
        return kept, "kept: a first executor" if kept else "not kept: no training tasks to check it on"
    evaluation = replace(settings.cycle.evaluation, group_size=2)
    snapshots = work_dir / "snapshots"
    before = await _evaluate_with(model, start_adapter, check, store, snapshots, evaluation, "distill-before")
    after = await _evaluate_with(model, distilled, check, store, snapshots, evaluation, "distill-after")
    kept = after.success >= before.success
    outcome = "kept" if kept else "not kept"
    return kept, f"{outcome}: {before.success:.2f} -> {after.success:.2f} on {len(check)} training tasks"


async def _evaluate_with(
    model: LocalModel,
    adapter: Path | None,
    tasks: Sequence[Task],
    store: MemoryStore,
    snapshots: Path,
    settings: ReplaySettings,
    label: str,
) -> Evaluation:
    """`tasks` replayed by `model` with `adapter` loaded for the while (None: the base model)."""
    if adapter is None:
        return await evaluate(tasks, LocalBackend(model), store, snapshots, settings, label)
    await asyncio.to_thread(model.load_adapter, "adapter", adapter)
    try:
        return await evaluate(
            tasks, LocalBackend(model, adapter="adapter"), store, snapshots, settings, label
        )
    finally:
        model.unload_adapter("adapter")


HELDOUT_LEDGER = "heldout_episodes.json"  # beside the nights' directories
VERIFIER_DIR = "verifiers"  # the kept planner-written checks, <task id>.sh, beside them too


class HeldoutLedger:
    """The episode ids of the user's held-out tasks, oldest first: a JSON list in a file,
    replaced atomically when a night finishes (a night cut short leaves it as it was)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> list[int]:
        try:
            ids = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []  # none yet, or damaged: tonight starts the set again
        return [i for i in ids if isinstance(i, int)] if isinstance(ids, list) else []

    def write(self, ids: list[int]) -> None:
        write_atomically(self.path, json.dumps(ids) + "\n")


def _episode_id(task: Task) -> int:
    return int(task.source.split(":", 1)[1])


def _served_results(result: CycleResult, user_tasks: Collection[str]) -> list[HeldoutResult]:
    """The held-out results on `user_tasks` of the executor in service after the gate: the
    candidate's when it was promoted, else the current one's (a night without user held-out
    tasks gated on the regression suite alone: none)."""
    evaluation = result.candidate if result.version is not None else result.current
    return [r for r in evaluation.results if r.task in user_tasks]


def _distill(
    model: LocalModel,
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
    policy = sft(model, examples, settings, start_adapter=start_adapter).policy
    try:
        return policy.save_adapter(target)
    finally:
        policy.close()  # the model as it was, for the checks and the cycle
