"""One learning cycle for the configured executor: `temper learn --now` and the daemon's nightly job.

The executor being trained is `[executor] model_dir` plus its current version's adapter
(`<data_dir>/executor/versions`). With backend "local" the cycle samples in process; with
"openai" (vLLM, `temper serve executor` at `[models.executor] api_base`) `model_dir` is the served
model's own directory: the cycle loads those base weights to train the adapter, and every replay
samples through the server (learner/served.py), corrected for the server's logprobs differing
from the trainer's by truncated importance sampling (`[learner] tis_cap`, learner/mismatch.py).
A promoted version reaches the server through the daemon's version switch (connectors/assembly.py
`follow_current_version`: load the new name, switch, unload the old once its runs end). A night (learner/night.py) turns the
executor episodes recorded since the last finished night into tasks (the newest held out), and
trains on them, the task folders imported with `temper tasks import` and the synthetic suite's
training families (drawn in that order of preference); the gate compares on the user's held-out
tasks and on a frozen regression suite (the synthetic suite's held-out families, always the same
instances). Replays run in `[sandbox] backend` under `[sandbox] timeout_s`. A cycle works in
`<data_dir>/learner/cycles/<started>/`; one interrupted (Ctrl-C, a crash) resumes from its
checkpoint when `temper learn --now` runs again within the same day. The harvest window's end is
kept in `<data_dir>/learner/collected_until`, written when a night finishes. With `[learner]
verifier_calls` above 0, the planner (`[models.planner]`) writes checks for that many of the
night's episode tasks (learner/tasks/written_verifier.py); without a key for it, none are written.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from connectors.config import Config
    from learner.followers import Followers
    from learner.night import NightSettings
    from learner.served import ServedSampler
    from runtime.models import ChatModel

REGRESSION_SEED = 0  # the synthetic suite's held-out instances every night compares on
COLLECTED_FILE = "collected_until"  # the end of the last finished night's harvest window


class LearnerSetupError(Exception):
    """The config does not name an executor the learner can train."""


async def run_learning_cycle(
    config: Config,
    *,
    minutes: float,
    say: Callable[[str], object],
    iterations: int = 500,
    per_family: int = 8,
    progress: Callable[[dict[str, object]], None] | None = None,
    followers: Followers | None = None,
) -> str:
    """One cycle; its report's text. `progress` receives the cycle's events as they happen
    (connectors/nightly/progress.py keeps them for `temper status`): {"phase": "collect",
    "iterations", "deadline"}, {"phase": "train", "iteration", "iterations", "reward"} after each
    iteration (may raise to stop the cycle there: its checkpoint is written), and {"phase":
    "done", "summary", "promoted"} at the end. `followers`: the other ranks `accelerate launch`
    started (`[learner] launcher`), this process being rank 0; they follow its training steps."""
    import torch

    from connectors.redaction import open_memory
    from learner import ExecutorVersions, StepMetrics, import_tasks, report_cycle, synthetic_suite
    from learner.night import run_night

    settings = config.executor
    if settings.backend not in ("local", "openai") or settings.model_dir is None:
        raise LearnerSetupError(
            'temper learn trains an executor model: set [executor] backend = "local" (or "openai" for a '
            "served one) and model_dir (e.g. a model from `temper quickstart`, or any Hugging Face "
            "causal LM directory; for a served executor, the served model's own directory)"
        )
    if settings.backend == "openai" and config.models.executor.api_base is None:
        raise LearnerSetupError(
            'a served executor (backend = "openai") is trained through its server: set '
            "[models.executor] api_base (e.g. http://127.0.0.1:8000/v1)"
        )
    torch.set_num_threads(config.learner.torch_threads)
    _check_model_dir(Path(settings.model_dir))
    _check_lora_targets(config, Path(settings.model_dir))
    _check_memory(config, Path(settings.model_dir), say)
    report_progress = progress or (lambda _event: None)
    deadline = time.time() + minutes * 60
    report_progress({"phase": "collect", "iterations": iterations, "deadline": deadline})
    day = time.strftime("%Y%m%d")
    work_dir = _cycle_dir(config.data_dir, day)
    seed = int(work_dir.name.replace("-", "")) % (1 << 31)  # a new night, new draws; a resumed one, the same
    synthetic = synthetic_suite(seed=seed, per_family=per_family)
    extra_train = [t for t in synthetic if t.split == "train"]
    imported_dir = config.data_dir / "tasks"
    if imported_dir.is_dir():
        imported = import_tasks(imported_dir, split="train").tasks
        extra_train = [task for task in imported if not task.needs_docker] + extra_train
    # The regression suite is frozen: the same held-out families and instances every night.
    regression = [
        t for t in synthetic_suite(seed=REGRESSION_SEED, per_family=per_family) if t.split == "heldout"
    ]
    versions = ExecutorVersions(config.data_dir)
    current = versions.current()
    since = _collected_until(config.data_dir)
    started = time.time()
    say(
        f"cycle in {work_dir}: the episodes since {time.strftime('%Y-%m-%d %H:%M', time.localtime(since))}, "
        f"{len(extra_train)} imported and synthetic training tasks, {len(regression)} regression tasks, "
        f"starting from {current.name if current else 'the base model'}"
    )

    def on_iteration(i: int, reward: float, metrics: StepMetrics) -> None:
        say(f"iteration {i}: train reward {reward:.2f}; {metrics.line()}")
        report_progress({"phase": "train", "iteration": i + 1, "iterations": iterations, "reward": reward})

    # The configured secrets redact the replays' trajectories: an episode that printed one is
    # marked, and never becomes a training row (the report counts it).
    planner = verifier_planner(config, say)
    with open_memory(config) as store:
        try:
            night = await run_night(
                Path(settings.model_dir), store, work_dir, versions, night_settings(config, iterations, seed, deadline, followers),
                since=since, snapshot_dir=config.data_dir / "snapshots", extra_train=extra_train,
                regression=regression, say=say, on_iteration=on_iteration,
                on_phase=lambda phase: report_progress({"phase": phase}), planner=planner,
            )  # fmt: skip
        finally:
            if planner is not None:
                from runtime.models import close_model_clients

                await close_model_clients()
    result = night.cycle
    report = report_cycle(
        config.data_dir,
        result,
        cycle=len(list((config.data_dir / "learner" / "reports").glob("cycle-*"))) + 1,
        model=settings.model_dir,
        tasks=len(extra_train) + sum(task.split == "train" for task in night.harvest.tasks),
        previous=None if current is None else current.name,
    )
    outcome = f"promoted {result.version.name}" if result.version else f"refused; {night.serving} stays"
    text = "\n".join([
        f"Night of {day}: {outcome} (held-out {result.decision.mean_current:.2f} -> "
        f"{result.decision.mean_candidate:.2f}); {night.harvest.line()}.",
        *night.lines()[1:],
        report.text,
    ])  # fmt: skip
    (work_dir / "done").write_text(text + "\n", encoding="utf-8")
    _write_collected_until(config.data_dir, started)
    report_progress({
        "phase": "done",
        "summary": text.splitlines()[0],
        "promoted": None if result.version is None else result.version.name,
    })  # fmt: skip
    return text


def night_settings(
    config: Config,
    iterations: int,
    seed: int,
    deadline: float | None,
    followers: Followers | None = None,
) -> NightSettings:
    """The night the config describes: replays in the configured sandbox, under its command
    timeout ceiling, with its turns and completion tokens; the rows' length limit; the harvest's
    time split and size limit; the planner-written checks' budget; the gate's margin; GRPO's learning rate, updates per batch, LoRA
    shape and gradient checkpointing (the distillation's too); the executor's device, dtype and attention implementation
    and the learner's torch threads (every load of the night uses them); the Ray cluster the
    training replays run on, when `[learner] ray_address` names one; with `followers`, the other ranks
    that train with this one, and this one's device."""
    from connectors.redaction import configured_secrets
    from learner.cycle import CycleSettings
    from learner.gate import GateSettings
    from learner.guidance import GuidanceSettings
    from learner.night import NightSettings
    from learner.policy import LoraSettings
    from learner.ray_replay import RaySettings
    from learner.replay import ReplaySettings, as_served
    from learner.rows import RowSettings
    from learner.tasks import HarvestSettings, VerifierSettings
    from learner.train import TrainSettings
    from runtime.executor import SamplingParams
    from runtime.executor.loop import ExecutorSettings

    learner, executor = config.learner, config.executor
    served = served_sampler(config)
    sandbox, ceiling = config.sandbox.backend, config.sandbox.timeout_s
    turns = ExecutorSettings(
        max_turns=learner.max_turns,
        sampling=SamplingParams(temperature=1.0, max_tokens=learner.max_completion_tokens),
    )
    replay = ReplaySettings(sandbox=sandbox, command_timeout_s=ceiling, executor=turns)
    evaluation = as_served(
        ReplaySettings(group_size=4, seed=10_000, sandbox=sandbox, command_timeout_s=ceiling, executor=turns),
        temperature=executor.temperature,
    )
    targets = learner.lora_target_modules
    lora = LoraSettings(
        rank=learner.lora_rank,
        alpha=learner.lora_alpha,
        target_modules=targets if isinstance(targets, str) else tuple(targets),
    )
    return NightSettings(
        cycle=CycleSettings(
            iterations=iterations, seed=seed, deadline=deadline, replay=replay, evaluation=evaluation,
            gate=GateSettings(non_inferiority_margin=learner.non_inferiority_margin),
            # A micro-batch holds the longest call: the configured size, or the learner's default
            # raised to that call's length.
            rows=RowSettings(
                max_row_tokens=learner.max_row_tokens,
                token_budget=learner.micro_batch_tokens or max(RowSettings().token_budget, learner.max_row_tokens),
            ),
            train=TrainSettings(
                learning_rate=learner.learning_rate, updates_per_batch=learner.updates_per_batch, lora=lora,
                tis_cap=(learner.tis_cap or None) if served is not None else None,  # 0: off
                gradient_checkpointing=learner.gradient_checkpointing,
            ),
            served=served, dtype=executor.dtype, attn_implementation=executor.attn_implementation,
            # Several ranks: each trains on the device the launcher gave it (cuda:<local rank>, or cpu).
            device=executor.device if followers is None else str(followers.parallel.device),
            followers=followers,
            guidance=GuidanceSettings() if learner.guidance else None,
            torch_threads=learner.torch_threads,
            ray=None if not learner.ray_address else RaySettings(
                address=learner.ray_address, workers=learner.ray_workers,
                gpus_per_worker=learner.ray_gpus_per_worker, torch_threads=learner.torch_threads,
            ),
        ),
        harvest=HarvestSettings(
            heldout_fraction=learner.heldout_fraction, max_workspace_bytes=learner.max_workspace_mb << 20
        ),
        # The configured secrets never reach the planner's prompt (a task that shows one is not sent).
        verifiers=VerifierSettings(calls=learner.verifier_calls, secrets=tuple(configured_secrets(config))),
        # The distilled adapter is where GRPO starts, so it has the configured LoRA shape.
        distill=replace(
            NightSettings().distill, lora=lora, gradient_checkpointing=learner.gradient_checkpointing
        ),
    )  # fmt: skip


def verifier_planner(config: Config, say: Callable[[str], object]) -> ChatModel | None:
    """The planner that writes the night's checks (`[learner] verifier_calls` above 0); None when
    they are off, or when the planner has no key (said: the night goes on without them)."""
    if not config.learner.verifier_calls:
        return None
    from runtime.models import ModelAuthError, model_from_slot

    try:
        return model_from_slot(config.models.planner)
    except ModelAuthError as error:
        say(f"no planner-written checks tonight: {error}")
        return None


def served_sampler(config: Config) -> ServedSampler | None:
    """The executor's server when it is served (backend "openai" with an api_base), else None.
    The learner's adapters go beside the versions (`<data_dir>/executor/versions/.learning`),
    inside the adapter root `temper serve executor` loads from."""
    from learner.served import ServedSampler
    from learner.versions import ExecutorVersions
    from runtime.models.slots import resolve_api_key

    slot = config.models.executor
    if config.executor.backend != "openai" or slot.api_base is None:
        return None
    name = slot.model.split("/", 1)[1] if slot.model.startswith(("openai/", "hosted_vllm/")) else slot.model
    return ServedSampler(
        base_url=slot.api_base,
        model=name,
        adapter_dir=ExecutorVersions(config.data_dir).versions_dir / ".learning",
        api_key=resolve_api_key(slot, os.environ) or None,
    )


def _check_model_dir(model_dir: Path) -> None:
    """Refuse a model directory that is not there or holds no model, before a cycle's directory
    is made (the load would fail after the harvest, deep in the cycle)."""
    from runtime.executor.errors import model_dir_problem

    if problem := model_dir_problem(model_dir):
        raise LearnerSetupError(
            f"[executor] model_dir {problem} (the warm-started model in `temper quickstart`'s "
            "directory is one: warm-best)"
        )


def _check_lora_targets(config: Config, model_dir: Path) -> None:
    """Refuse, before anything loads, a `lora_target_modules` list naming a module the model has
    not (peft would raise deep in the cycle, or skip it silently). Weights not in safetensors
    cannot be read this way and are left to peft."""
    from learner.memory_estimate import EstimateError, unmatched_targets, weight_shapes
    from learner.policy import LoraSettings

    targets = config.learner.lora_target_modules
    if isinstance(targets, str):
        return
    try:
        shapes = weight_shapes(model_dir)
    except EstimateError:
        return
    missing, names = unmatched_targets(shapes, LoraSettings(target_modules=tuple(targets)))
    if missing:
        raise LearnerSetupError(
            f"[learner] lora_target_modules names {', '.join(map(repr, missing))}, but no module of "
            f"{model_dir} is called that; its modules with a weight matrix end in: {', '.join(names)} "
            '(or set lora_target_modules = "all-linear")'
        )


def _check_memory(config: Config, model_dir: Path, say: Callable[[str], object]) -> None:
    """Say the cycle's peak-memory estimate (learner/memory_estimate.py), and refuse, with its
    numbers, a cycle that cannot fit the device's free memory, or whose device is not there. A
    model directory the estimate cannot read (weights not in safetensors) is trained all the same."""
    from learner.memory_estimate import EstimateError, estimate_cycle, free_memory
    from runtime.executor import ExecutorLoadError

    try:
        estimate = estimate_cycle(model_dir, night_settings(config, 1, 0, None).cycle)
    except EstimateError as error:
        say(f"no memory estimate: {error}")
        return
    except ExecutorLoadError as error:  # a device torch does not see
        raise LearnerSetupError(str(error)) from None
    say(estimate.line())
    refusal = estimate.refusal(free_memory(estimate.device))
    if refusal is not None:
        raise LearnerSetupError(refusal)


def _collected_until(data_dir: Path) -> float:
    """Where the last finished night's harvest stopped (a day ago when none has finished)."""
    try:
        return float((data_dir / "learner" / COLLECTED_FILE).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return time.time() - 86_400.0


def _write_collected_until(data_dir: Path, until: float) -> None:
    path = data_dir / "learner" / COLLECTED_FILE
    temporary = path.with_name(f".{COLLECTED_FILE}.tmp")
    temporary.write_text(f"{until}\n", encoding="utf-8")
    temporary.replace(path)


def _cycle_dir(data_dir: Path, day: str) -> Path:
    """Today's unfinished cycle directory (to resume), else a new one."""
    root = data_dir / "learner" / "cycles"
    for existing in sorted(root.glob(f"{day}-*"), reverse=True):
        if not (existing / "done").exists():
            return existing
    directory = root / time.strftime(f"{day}-%H%M%S")
    directory.mkdir(parents=True, exist_ok=True)
    return directory
