"""One learning cycle: replay -> build rows -> train -> gate -> promote.

    for each iteration:  replay a batch of training tasks G times with the policy being trained
                         (learner/replay.py), build GRPO rows from exactly those episodes
                         (learner/rows.py), take one training step on them (learner/train.py:
                         `updates_per_batch` optimizer updates); with `guidance`, then one
                         supervised step on the references of the tasks no attempt solved
                         (learner/guidance.py)
    (which tasks: learner/task_sampling.py, uniformly or weighted towards tasks whose groups vary)
    then:                replay the frozen held-out tasks with the same seeds for the current
                         executor and the candidate, and let the gate decide (learner/gate.py);
                         promote the candidate's adapter as a new version if it says yes

Two held-out sets: `heldout`, the user's own latest tasks (never trained on), where the candidate
must be better, and `regression`, a frozen suite where it must not be worse than a margin; with
no regression set the gate judges `heldout` alone. The day's episodes enter as tasks
(learner/tasks/episodes.py), replayed like any other, since GRPO wants groups generated now, by
the policy being trained; learner/night.py puts a night together.
`train_from` lets training start from another adapter than the current version (a distilled one,
learner/night.py) while the gate still compares with the version in service.
With `served` set (a served executor: vLLM, `temper serve executor`), the trainer keeps the
base weights here and every replay samples through the server, the trainer's adapter loaded
into it before each iteration (learner/served.py); the gate compares the version in service and
the candidate as the server samples them. With `ray` set, the training replays run on a Ray
cluster's workers, each holding the policy's weights of that iteration (learner/ray_replay.py);
the gate's replays stay here. With `followers` set (several processes under `accelerate launch`,
this one rank 0), every rank trains on its share of each step's rows (learner/followers.py);
the rest of the cycle runs here. Each step's metrics go to
`metrics.jsonl` in `work_dir`, one JSON object a line.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

from learner.evaluation import Evaluation, evaluate
from learner.followers import Followers, TrainerSpec
from learner.gate import GateDecision, GateSettings, decide
from learner.guidance import Guidance, GuidanceSettings
from learner.promote import promote
from learner.ray_replay import LoadSettings, RayReplay, RaySettings
from learner.replay import ReplaySettings, as_served, replay
from learner.rows import RowSettings, build_rows
from learner.selection import BestOnValidation
from learner.served import ServedPolicy, ServedSampler
from learner.task_sampling import TaskSampler, TaskSampling
from learner.tasks import Task
from learner.train import GRPOTrainer, StepMetrics, TrainSettings
from learner.versions import ExecutorVersions, Version, VersionMeta, model_hash
from memory import MemoryStore
from runtime.executor import ExecutorBackend, LocalBackend, LocalModel


@dataclass(frozen=True)
class CycleSettings:
    iterations: int = 20
    tasks_per_iteration: int = 16
    task_sampling: TaskSampling = "learnability"  # learner/task_sampling.py
    replay: ReplaySettings = field(default_factory=ReplaySettings)
    # Training replays sample freely (their logprobs are then exactly the policy's); the gate sees
    # the executor as the runtime serves it, its replies kept to the action format.
    evaluation: ReplaySettings = field(
        default_factory=lambda: as_served(ReplaySettings(group_size=4, seed=10_000))
    )
    rows: RowSettings = field(default_factory=RowSettings)
    train: TrainSettings = field(default_factory=TrainSettings)
    gate: GateSettings = field(default_factory=GateSettings)
    seed: int = 0
    deadline: float | None = None  # time.time() after which no new iteration starts
    # Where and how the model directory loads (runtime/executor/local_model.py `LocalModel.load`):
    # "auto", "cpu", "cuda", "cuda:N"; None (float32), "auto" or a dtype's name; None or e.g. "sdpa".
    device: str = "cpu"
    dtype: str | None = None
    attn_implementation: str | None = None
    torch_threads: int | None = 1  # on CPU, torch's threads for the process (None: left as they are)
    # How much more often a task is drawn for its source (task_sampling.py): the day's episodes
    # first, then imported folders, then the synthetic suite.
    source_weights: dict[str, float] = field(
        default_factory=lambda: {"episode": 4.0, "tbench": 2.0, "synthetic": 1.0}
    )
    # The executor's server, when it is served (replays sample through it); None: sampled here.
    served: ServedSampler | None = None
    # Training replays on a Ray cluster (learner/ray_replay.py); None: in this process.
    ray: RaySettings | None = None
    # The other ranks, when this process is rank 0 of several that train together
    # (learner/followers.py); None: it trains alone.
    followers: Followers | None = None
    # A supervised step on the references of the tasks whose whole group failed, after each
    # GRPO step (learner/guidance.py); None: GRPO alone.
    guidance: GuidanceSettings | None = None

    def __post_init__(self) -> None:
        if self.ray is not None and self.served is not None:
            raise ValueError(
                "Ray replays sample with the trainer's own weights and a served executor samples "
                "through its server: set [learner] ray_address or an openai executor, not both"
            )
        if self.followers is not None and self.guidance is not None:
            raise ValueError(
                "guidance steps train rank 0's adapter alone: with several training processes they "
                "would leave the ranks' weights apart; use guidance with one training process"
            )
        if self.followers is not None and self.followers.parallel.fsdp and self.served is None:
            raise ValueError(
                "with FSDP the base weights are sharded across the ranks, so rank 0 cannot sample "
                "replays on its own: FSDP in a cycle needs a served executor (backend openai)"
            )
        # Versions are adapters on the base model (learner/versions.py; runtime/executor/switch.py loads them); a whole
        # fine-tuned model has no adapter to gate, promote or load into the running executor.
        if self.train.lora is None:
            raise ValueError(
                "a learning cycle trains and promotes a LoRA adapter (executor versions are adapters "
                "on the base model); full fine-tuning (train.lora=None) is for GRPOTrainer used "
                "directly, saving with policy.save_model"
            )


@dataclass(frozen=True)
class ProbePoint:
    """One probe: `steps` iterations done, success on the probe's curve tasks, and on the
    validation tasks that choose the candidate (None when none choose); `kept`: this point's
    adapter is now the best on validation."""

    steps: int
    curve: Evaluation
    validation: Evaluation | None = None
    kept: bool = False


@dataclass(frozen=True)
class Probe:
    """Held-out success measured every `every` iterations while training.

    `tasks`: a curve to read, never a choice. `choose_on`: validation tasks; when given, they are
    probed too (and after the last step), and the candidate is the probed adapter with the best
    success on them (learner/selection.py), not the last step's. Without them the candidate is the
    last step's and its gate evaluation is the curve's last point. `evaluation`: the probes'
    replay settings (None: the gate's)."""

    tasks: Sequence[Task]
    every: int
    report: Callable[[ProbePoint], None]
    choose_on: Sequence[Task] = ()
    evaluation: ReplaySettings | None = None


@dataclass
class CycleResult:
    steps: list[StepMetrics]
    train_reward: list[tuple[int, float]]  # (iteration, mean reward of its replays)
    current: Evaluation
    candidate: Evaluation
    decision: GateDecision
    version: Version | None
    adapter_dir: Path
    regression_current: Evaluation | None = None  # None: no regression set
    regression_candidate: Evaluation | None = None
    candidate_step: int | None = None  # the iterations behind the candidate; None: the last step's

    @property
    def secret_episodes(self) -> int:
        """Replayed episodes left out of training because they held a secret."""
        return sum(step.secret_episodes for step in self.steps)


async def run_cycle(
    model_dir: Path,
    train: Sequence[Task],
    heldout: Sequence[Task],
    store: MemoryStore,
    work_dir: Path,
    versions: ExecutorVersions,
    settings: CycleSettings,
    on_iteration: Callable[[int, float, StepMetrics], None] | None = None,
    start_adapter: Path | None = None,
    *,
    regression: Sequence[Task] = (),
    train_from: Path | None = None,
    on_phase: Callable[[str], None] | None = None,
    probe: Probe | None = None,
) -> CycleResult:
    """`work_dir` is this cycle's own directory; `start_adapter`: the current version's adapter
    (None: the base model is in service); `train_from`: the adapter training starts from, when
    not the current one; `on_phase("train" | "gate")` as the cycle moves on; `probe`: a
    held-out curve measured while training."""
    if not heldout and not regression:
        raise ValueError("the gate needs held-out tasks: give heldout or regression tasks")
    if not heldout:  # no user tasks held out yet: the regression suite is the whole evidence
        heldout, regression = regression, ()
    async with AsyncExitStack() as stack:
        served = None  # a served executor: the server samples; what it loaded goes at the end
        if settings.served is not None:
            served = await stack.enter_async_context(ServedPolicy(settings.served, model_dir))
        # One copy of the base weights (learner/policy.py): the version in service and the policy being
        # trained are two adapters on it, the reference policy is it with the adapters disabled.
        model = load_model(model_dir, settings)
        current_backend: ExecutorBackend
        if served is not None:  # the version in service, as the server samples it
            current_backend = await served.adapter(start_adapter)
        else:
            if start_adapter is not None:
                model.load_adapter("current", start_adapter)
            current_backend = LocalBackend(model, adapter="current" if start_adapter is not None else None)
        followers = settings.followers  # the other ranks, when several processes train together
        if followers is not None:
            stack.callback(followers.release)  # however the cycle ends, they are not left waiting
            followers.start(TrainerSpec(
                model_dir, settings.train, work_dir / "checkpoints", train_from or start_adapter,
                settings.dtype, settings.attn_implementation, settings.torch_threads,
            ))  # fmt: skip
        # Checkpoints of this cycle only: the trainer resumes from what it finds there.
        trainer = GRPOTrainer(
            model,
            settings.train,
            work_dir / "checkpoints",
            start_adapter=train_from or start_adapter,
            parallel=None if followers is None else followers.parallel,
        )
        policy: ExecutorBackend = LocalBackend(trainer.policy.sampler) if served is None else served.backend
        guidance = None
        if settings.guidance is not None:
            guidance = Guidance(
                trainer.policy,
                settings.guidance,
                learning_rate=settings.train.learning_rate,
                max_grad_norm=settings.train.max_grad_norm,
                threads=settings.train.threads,
            )
        cluster = None  # replay workers holding the policy's weights, when replays run on Ray
        if settings.ray is not None:
            load = LoadSettings(settings.device, settings.dtype, settings.attn_implementation)
            cluster = RayReplay.connect(model_dir, settings.ray, load)
        sampler = TaskSampler(
            train,
            settings.task_sampling,
            random.Random(settings.seed),
            source_weights=settings.source_weights,
        )
        if on_phase is not None:
            on_phase("train")
        steps: list[StepMetrics] = []
        rewards: list[tuple[int, float]] = []
        steps_done_before = trainer.step_count
        # The candidate chosen on validation, when the probe has validation tasks (a resumed
        # cycle finds the best of its earlier probes in the same directory).
        kept = BestOnValidation(work_dir / "selected") if probe is not None and probe.choose_on else None
        # A cycle interrupted and started again in the same directory resumes from its checkpoint.
        for iteration in range(trainer.step_count, settings.iterations):
            if settings.deadline is not None and time.time() > settings.deadline:
                break
            started = time.time()
            batch = sampler.draw(settings.tasks_per_iteration)
            if served is not None:  # the server samples the adapter as trained so far
                policy = await served.sync(trainer)
            replaying = replace(settings.replay, seed=settings.seed * 100_003 + iteration)
            if cluster is not None:
                attempts = await cluster.replay(
                    batch, trainer.policy, store, work_dir / "snapshots", replaying, f"grpo{iteration}"
                )
            else:
                attempts = await replay(
                    batch, policy, store, work_dir / "snapshots", replaying, f"grpo{iteration}"
                )
            sampler.record((a.task_id, a.reward) for a in attempts)
            reward = sum(a.reward for a in attempts) / len(attempts)
            rewards.append((iteration, reward))
            # Episodes that printed a secret are marked as they are recorded, and never read back.
            withheld = store.trajectories.secret_marked_count(since=started, split="train")
            rows = build_rows(
                store.trajectories.read(since=started, split="train"), settings.rows, secret_withheld=withheld
            )
            metrics = trainer.step(rows) if followers is None else followers.step(trainer, rows)
            guided = guidance.step(batch, attempts) if guidance is not None else None
            steps.append(metrics)
            _log_metrics(work_dir / "metrics.jsonl", iteration, metrics, guided)
            if on_iteration is not None:
                on_iteration(iteration, reward, metrics)
            done = iteration + 1
            # The last step is probed after the loop when validation chooses; without a choice its
            # point is the gate's candidate evaluation, not measured twice.
            if (
                probe is not None
                and probe.every > 0
                and done % probe.every == 0
                and done < settings.iterations
            ):
                if served is not None:
                    policy = await served.sync(trainer)
                await _probe(probe, done, policy, trainer, kept, store, work_dir, settings)
        if followers is not None:  # training is over: the gate and promotion are this rank's
            followers.release()
        candidate_step = None
        if probe is not None and kept is not None:
            # The last step is probed too (however the loop ended), then the best goes back in.
            last_done = steps_done_before + len(steps)
            if last_done and not any(step == last_done for step, _ in kept.history):
                if served is not None:
                    policy = await served.sync(trainer)
                await _probe(probe, last_done, policy, trainer, kept, store, work_dir, settings)
            candidate_step = kept.restore(trainer.policy)
        adapter_dir = trainer.save_adapter(work_dir / "candidate")
        if served is not None:  # the candidate, as the server will sample it
            policy = await served.sync(trainer)
        if on_phase is not None:
            on_phase("gate")
        snapshots = work_dir / "snapshots"
        current = await evaluate(
            heldout, current_backend, store, snapshots, settings.evaluation, "gate-current"
        )
        candidate = await evaluate(heldout, policy, store, snapshots, settings.evaluation, "gate-candidate")
        regression_current = regression_candidate = None
        if regression:
            regression_current = await evaluate(
                regression, current_backend, store, snapshots, settings.evaluation, "regression-current"
            )
            regression_candidate = await evaluate(
                regression, policy, store, snapshots, settings.evaluation, "regression-candidate"
            )
        decision = decide(
            current.results,
            candidate.results,
            settings.gate,
            regression=None
            if regression_current is None or regression_candidate is None
            else (regression_current.results, regression_candidate.results),
        )
        version = None
        if decision.promote:
            meta = VersionMeta(
                base_model=str(model_dir),
                base_model_hash=model_hash(model_dir),
                parent=versions.current_name(),
                training={
                    "steps": len(steps),
                    "train_reward": rewards[-1][1] if rewards else None,
                    "candidate_step": candidate_step,  # chosen on validation; None: the last step
                },
                gate=decision.as_dict(),
            )
            version = promote(versions, adapter_dir, meta)
        return CycleResult(
            steps, rewards, current, candidate, decision, version, adapter_dir,
            regression_current, regression_candidate, candidate_step,
        )  # fmt: skip


async def _probe(
    probe: Probe,
    steps: int,
    policy: ExecutorBackend,
    trainer: GRPOTrainer,
    kept: BestOnValidation | None,
    store: MemoryStore,
    work_dir: Path,
    settings: CycleSettings,
) -> None:
    """Replay the probe's curve tasks and validation tasks together (one batch for the sampler),
    offer the adapter to `kept` and report the point."""
    validation = list(probe.choose_on) if kept is not None else []
    curve_ids = {task.id for task in probe.tasks}
    tasks = list(probe.tasks) + [task for task in validation if task.id not in curve_ids]
    evaluation = probe.evaluation or settings.evaluation
    measured = await evaluate(tasks, policy, store, work_dir / "snapshots", evaluation, f"probe{steps}")
    validation_ids = {task.id for task in validation}
    curve = Evaluation([r for r in measured.results if r.task in curve_ids])
    on_validation = None
    taken = False
    if kept is not None:
        on_validation = Evaluation([r for r in measured.results if r.task in validation_ids])
        taken = kept.offer(steps, on_validation.success, trainer.policy)
    probe.report(ProbePoint(steps, curve, on_validation, taken))


def _log_metrics(path: Path, iteration: int, metrics: StepMetrics, guided: int | None) -> None:
    """`guided`: references the guidance step trained on (None: no guidance)."""
    record = {"iteration": iteration, **metrics.as_dict()}
    if guided is not None:
        record["guided"] = guided
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")


def load_model(model_dir: Path, settings: CycleSettings) -> LocalModel:
    """The model directory as `settings` say it loads: device, dtype, attention, torch threads."""
    return LocalModel.load(
        model_dir,
        device=settings.device,
        dtype=settings.dtype,
        threads=settings.torch_threads,
        attn_implementation=settings.attn_implementation,
    )
