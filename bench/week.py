"""A simulated week: one user's traffic by day, the nightly job by night, through the real `Agent`.

Each day a simulated user (bench/week_user.py) sends N requests drawn from a habit profile of
the synthetic task families, fresh instances every day. Each request is a new session whose
workspace holds the task's files (the session's workspace snapshot, as a returning session's
would); the real `Agent`, built by connectors/assembly.py's `build_agent` from a config, answers
it: the planner is a scripted OpenAI-compatible server on 127.0.0.1 (bench/week_planner.py) that
sends terminal work to `terminal_task` and, when the planner route does executor work, answers
with the task's reference commands as the executor's JSON actions. The executor is a tiny model
built offline from scratch (runtime/executor/tiny.py, `[executor] backend = "local"`). After each
reply the user runs the family's verifier on the workspace (the agent never sees it) and gives
thumbs up or down (`Agent.feedback`, the reward's source "user").

Each night but the last, the daemon's nightly job runs with a budget (`run_night`), while cheap
chat messages keep arriving: their reply latency while it runs against the same messages just
before it (idle) is the training's cost to the people talking to the agent. The next morning the
promoted version, if any, serves (`take_up_promoted_version`).

This drives the real `Agent` (as the daemon builds it) and the daemon's nightly job: the cycle
runs in its worker process (connectors/nightly/), the agent keeps answering meanwhile, and the
next morning its executor follows the version pointer without a restart
(`follow_current_version`, what the daemon's main loop does). Routing is the runtime's own, per
kind of task (runtime/executor/routing.py). The route each terminal task took is read from its
recorded executor episode (`route_of`).

Prints a per-day table, then `name: value` summary lines (targets from issue 18, for
`--days 5` on 2 cores): final_executor_share (>= 0.5), final_success (no more than 5 points
below day1_success), planner_tokens_per_task_reduction (>= 0.30), training_latency_p50_ratio
(<= 2), unsandboxed_commands (0), crashes (0). Baseline: day 1, when the planner does all
terminal work, measured in the same run. Writes week.png (the curves) in --out.

    python bench/week.py --days 5 [--quick] [--seed N] [--night-minutes M] [--out DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repository first: bench/memory.py would shadow memory/
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.week_planner import ScriptedPlanner  # noqa: E402
from bench.week_report import (  # noqa: E402
    DayFigures,
    NightFigures,
    RequestOutcome,
    Route,
    plot_week,
    print_summary,
    print_table,
)
from bench.week_user import SimulatedUser  # noqa: E402
from connectors.assembly import Assembled, build_agent, follow_current_version  # noqa: E402
from connectors.config import Config  # noqa: E402
from learner import ExecutorVersions  # noqa: E402
from learner.tasks import Task, task_snapshot  # noqa: E402
from memory import BASE_VERSION, RecordedCall  # noqa: E402
from runtime import Inbound, Replied, TurnFailed  # noqa: E402

USER = "ana"
PROBE_TEXT = "thanks! what's next on my list?"


@dataclass(frozen=True)
class WeekSettings:
    days: int
    requests_per_day: int
    night_minutes: float
    quick: bool
    seed: int
    idle_probes: int
    probe_interval_s: float
    executor: Path | None = None  # a base executor built before (its `executor` directory)


# The seams: what issue 18 changes, one function each ---------------------------------------


async def run_night(config: Config, minutes: float, quick: bool, say: Callable[[str], object]) -> str:
    """The daemon's nightly job within `minutes`: the cycle in its worker process (niced, its own
    torch thread), as the daemon runs it (connectors/nightly/runner.py); its summary line.
    `quick`: a few iterations on one synthetic task per family."""
    from connectors.nightly.runner import NightlyRun, NightlySettings

    # Four synthetic tasks per family: 28 regression tasks for the gate, the nights' own work
    # bounded (the gate replays every held-out task four times for each of two executors).
    settings = NightlySettings(iterations=3 if quick else 500, per_family=1 if quick else 4, minutes=minutes)
    outcome = await NightlyRun(config, settings).run()
    say(f"worker {outcome.phase}: {outcome.summary}")
    return outcome.summary or outcome.phase


async def take_up_promoted_version(assembled: Assembled, config: Config) -> tuple[Assembled, Config]:
    """The agent that serves the next day: the running one, switched to the version the night
    promoted (in process, without a restart), as the daemon's main loop does when the version
    pointer moves."""
    await follow_current_version(config, assembled.terminal)
    return assembled, config


def version_in_service(assembled: Assembled) -> str:
    """The executor version serving new terminal work ("base": the base model)."""
    terminal = assembled.terminal
    version = None if terminal is None else terminal.version
    return version or BASE_VERSION


def route_of(calls: list[RecordedCall]) -> Route:
    """Which route an executor episode took: its calls' model says (the planner's carry "planner:")."""
    if not calls:
        return "none"
    return "planner" if any(call.model.startswith("planner:") for call in calls) else "executor"


# A day ---------------------------------------------------------------------------------------


async def serve_request(
    assembled: Assembled, user: SimulatedUser, task: Task, config: Config, name: str
) -> RequestOutcome:
    """One request in a new session whose workspace holds the task's files; the user's verdict."""
    agent, store = assembled.agent, assembled.store
    inbound = Inbound(
        platform="cli", chat_id=name, user_id=USER, text=task.instruction, platform_message_id=name
    )
    session_id = _open_session(assembled, inbound)
    snapshot = await task_snapshot(task, config.data_dir / "snapshots")
    store.set_workspace_snapshot(session_id, snapshot.id)
    started = time.time()
    failed = False
    async for event in agent.turn(inbound):
        failed = failed or isinstance(event, TurnFailed)
    await agent.drain()
    sandbox = await agent.workspaces.get(session_id, store.workspace_snapshot(session_id))
    passed = await user.react(task, sandbox)
    await agent.workspaces.put_away(session_id)
    agent.feedback(inbound.session_key, passed)
    episodes = [
        s.episode
        for s in store.trajectories.summaries(since=started, limit=None)
        if s.episode.session_id == session_id
    ]
    routes: list[Route] = []
    executor_tokens = 0
    for episode in episodes:
        calls = store.trajectories.calls(episode.id)
        routes.append(route_of(calls))
        if routes[-1] == "executor":
            executor_tokens += sum(len(c.prompt_ids) + len(c.completion_ids) for c in calls)
    route: Route = "executor" if "executor" in routes else "planner" if "planner" in routes else "none"
    return RequestOutcome(task.family, route, passed and not failed, executor_tokens, crashed=failed)


def _open_session(assembled: Assembled, inbound: Inbound) -> int:
    """The session the agent will find for `inbound`, created as `Agent.receive` creates it, so
    that its workspace can be set before the turn."""
    store = assembled.store
    user_id = store.user_for_identity(*inbound.identity)
    if user_id is None:
        user_id = store.ensure_user(f"{inbound.platform}:{inbound.user_id}")
        store.link_identity(inbound.platform, inbound.user_id, user_id)
    return store.ensure_session(
        inbound.session_key, platform=inbound.platform, chat_id=inbound.chat_id, user_id=user_id
    )


async def serve_day(
    assembled: Assembled,
    user: SimulatedUser,
    planner: ScriptedPlanner,
    config: Config,
    day: int,
    settings: WeekSettings,
) -> tuple[list[RequestOutcome], int]:
    """The day's requests, one after another; their outcomes and the planner tokens they cost."""
    tasks = user.requests(day, settings.requests_per_day)
    for task in tasks:
        planner.learn(task)  # a capable planner: it knows how each is done
    before = planner.tokens.total
    outcomes = []
    for number, task in enumerate(tasks):
        try:
            outcome = await serve_request(assembled, user, task, config, f"week-d{day}-r{number}")
        except Exception:  # counted as a crash and shown; the week goes on
            traceback.print_exc()
            outcome = RequestOutcome(task.family, "none", False, 0, crashed=True)
        outcomes.append(outcome)
    return outcomes, planner.tokens.total - before


# A night -------------------------------------------------------------------------------------


async def reply_ms(assembled: Assembled, chat_id: str, number: int) -> float:
    """A cheap chat message's time to its reply (the after-reply work not included)."""
    inbound = Inbound(
        platform="cli",
        chat_id=chat_id,
        user_id=USER,
        text=PROBE_TEXT,
        platform_message_id=f"{chat_id}-{number}",
    )
    started = time.perf_counter()
    elapsed = float("nan")
    async for event in assembled.agent.turn(inbound):
        if isinstance(event, Replied | TurnFailed):
            elapsed = (time.perf_counter() - started) * 1000
    return elapsed


async def night(assembled: Assembled, config: Config, day: int, settings: WeekSettings) -> NightFigures:
    """Idle reply latency, then the nightly job with messages arriving while it runs."""
    chat = f"week-probe-n{day}"
    idle: list[float] = []
    for number in range(settings.idle_probes):
        idle.append(await reply_ms(assembled, chat, number))
        await asyncio.sleep(settings.probe_interval_s)
    before = ExecutorVersions(config.data_dir).current_name()
    started = time.time()
    say = lambda line: print(f"  night {day} [{time.time() - started:5.0f}s] {line}", flush=True)  # noqa: E731
    job = asyncio.create_task(run_night(config, settings.night_minutes, settings.quick, say))
    training: list[float] = []
    try:
        while not job.done():
            training.append(await reply_ms(assembled, chat, len(idle) + len(training)))
            await asyncio.sleep(settings.probe_interval_s)
    finally:
        if not job.done():  # a probe failed: the night must not outlive the week
            job.cancel()
    await assembled.agent.drain()
    try:
        report = job.result()
    except Exception:  # counted as a crash and shown; the week goes on
        traceback.print_exc()
        return NightFigures(idle, training, "crashed", time.time() - started)
    say(report.splitlines()[0] if report else "(no report)")
    after = ExecutorVersions(config.data_dir).current_name()
    decision = f"promoted {after}" if after != before else "refused"
    return NightFigures(idle, training, decision, time.time() - started)


# The week ------------------------------------------------------------------------------------


def week_config(data_dir: Path, planner_url: str, model_dir: Path, night_minutes: float) -> Config:
    """The config the week runs with: the scripted planner, the tiny local executor, no judge
    (the user's reactions are the rewards), isolating sandboxes ("auto": docker, else bwrap)."""
    planner = {"model": "openai/planner", "api_base": planner_url, "api_key": "sk-week", "api_key_env": ""}
    return Config.model_validate({
        "data_dir": str(data_dir),
        "models": {"planner": planner, "judge": {"api_key_env": ""}},
        "sandbox": {"backend": "auto"},
        "executor": {"backend": "local", "model_dir": str(model_dir)},
        # GRPO as the quickstart trains this tiny model: LoRA at the default 1e-4 (for real
        # models) barely moves it (a night at 1e-4: held-out 0.50 -> 0.50).
        "learner": {"budget_minutes": night_minutes, "learning_rate": 2e-3, "updates_per_batch": 2},
    })  # fmt: skip


def build_base_executor(out: Path, seed: int, quick: bool) -> Path:
    """The executor's base model, built offline: a tiny Qwen3 with random weights, then taught
    the action format by imitating reference solutions of a generic curriculum (the synthetic
    suite's grid families, 48 instances each, full weights, a fixed number of epochs): a
    stand-in for a pretrained small model, which a LoRA adapter can then specialise. (A LoRA
    adapter on random weights learns nothing: its loss stays flat.) 48 instances a family, not
    16: with 16 the stand-in copied file names from the instruction unreliably (0.26 on the
    user's tasks at temperature 0.7 against 0.51), which no real small model gets wrong. The
    user's habits overlap the curriculum only in part: create_file, append_line, grep_lines,
    replace_word, sum_numbers, count_unique are not in it."""
    from learner.sft import SFTSettings, sft
    from learner.tasks import GRID_FAMILIES, GRID_HELDOUT, synthetic_suite
    from learner.warmstart import examples
    from runtime.executor import LocalModel, build_tiny_model

    tiny = build_tiny_model(out / "tiny", seed=seed)
    curriculum = [
        t
        for t in synthetic_suite(seed=1_000 + seed, per_family=2 if quick else 48, families=GRID_FAMILIES,
                                 heldout_families=GRID_HELDOUT)
        if t.split == "train" and t.reference
    ]  # fmt: skip
    started = time.time()
    epochs = 2 if quick else 20
    result = sft(
        LocalModel.load(tiny),
        examples(curriculum),
        SFTSettings(max_epochs=epochs, learning_rate=3e-3, examples_per_step=16, seed=seed),
    )
    model_dir = result.policy.save_model(out / "executor")
    print(
        f"executor: tiny Qwen3 (random weights, seed {seed}) taught the action format offline on "
        f"{len(curriculum)} reference solutions of {len({t.family for t in curriculum})} grid families, "
        f"{epochs} epochs, loss {result.epochs[-1].loss:.3f}, {time.time() - started:.0f} s: {model_dir}"
    )
    return model_dir


async def run_week(settings: WeekSettings, out: Path) -> list[DayFigures]:
    from runtime.executor.tiny import build_tokenizer

    model_dir = settings.executor or build_base_executor(out, settings.seed, settings.quick)
    user = SimulatedUser(settings.seed)
    days: list[DayFigures] = []
    with ScriptedPlanner(build_tokenizer()) as planner:
        config = week_config(out / "data", planner.base_url, model_dir, settings.night_minutes)
        assembled = build_agent(config, environ={})
        for note in assembled.notes:
            print(f"note: {note}")
        try:
            for day in range(1, settings.days + 1):
                began = time.time()
                outcomes, tokens = await serve_day(assembled, user, planner, config, day, settings)
                version = version_in_service(assembled)
                print(f"day {day}: {len(outcomes)} requests in {time.time() - began:.0f} s", flush=True)
                figures = None
                if day < settings.days:
                    figures = await night(assembled, config, day, settings)
                    assembled, config = await take_up_promoted_version(assembled, config)
                days.append(DayFigures(day, outcomes, tokens, version, figures))
            unsandboxed = sum(
                s.episode.sandbox_backend == "local"
                for s in assembled.store.trajectories.summaries(limit=None)
            )
        finally:
            await assembled.agent.close()
            assembled.store.close()
        if planner.unknown_queries:
            print(
                f"note: the planner was asked {len(planner.unknown_queries)} executor queries it did not know"
            )
    print()
    print_table(days)
    print()
    print_summary(days, unsandboxed, sum(d.crashes for d in days))
    return days


def machine_line() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass  # not Linux: platform.processor() says what it can
    return f"machine: {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, torch threads 1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="6 requests a day, ~1 minute nights")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--requests", type=int, default=None, help="per day (default 24; --quick 6)")
    parser.add_argument(
        "--night-minutes", type=float, default=None, help="the nightly budget (default 8; --quick 1)"
    )
    parser.add_argument(
        "--executor",
        type=Path,
        default=None,
        help="a base executor model directory a run built before (DIR/executor), instead of building one",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where the data and week.png go (default: a new temp dir, kept)",
    )
    args = parser.parse_args()
    if args.days < 1:
        parser.error("--days must be at least 1")
    settings = WeekSettings(
        days=args.days,
        requests_per_day=args.requests or (6 if args.quick else 24),
        night_minutes=args.night_minutes or (1.0 if args.quick else 8.0),
        quick=args.quick,
        seed=args.seed,
        idle_probes=5 if args.quick else 20,
        probe_interval_s=0.2,
        executor=args.executor,
    )

    import torch

    torch.set_num_threads(1)  # FACTS.md: on 2 cores one thread is 3-4x faster than two
    print(machine_line())
    print(
        f"week: {settings.days} days x {settings.requests_per_day} requests, nights of {settings.night_minutes:g} min, "
        f"seed {settings.seed}; the real Agent (build_agent) and the daemon's nightly job in one process"
    )
    started = time.time()
    out = args.out or Path(tempfile.mkdtemp(prefix="temper-week-"))
    out.mkdir(parents=True, exist_ok=True)
    days = asyncio.run(run_week(settings, out))
    print(f"plot: {plot_week(days, out / 'week.png')}")
    print(f"wall_s: {time.time() - started:.0f}")


if __name__ == "__main__":
    main()
