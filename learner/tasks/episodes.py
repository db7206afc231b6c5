"""The day's executor episodes as replayable tasks, and the planner's as distillation examples.

    harvest = await harvest_episodes(store, snapshot_dir, since=t0, settings=HarvestSettings())
    harvest.tasks          Task("ep<id>", family "episode", source "episode:<id>", with an outcome)
    harvest.line()         "12 of the day's 20 episodes became tasks; excluded: 3 failed, ..."
    distillation_examples(store, since=t0)   the planner's successful calls as SFT targets

An episode becomes a task when all of these hold, checked in this order; the first that fails
is the reason it is excluded (each counted):

1. `secret`: it is not secret-marked (its text held a secret, so its tokens may too);
2. `unrewarded` / `failed`: it finished (`succeeded`) and its learning reward (`episode_reward`:
   its own, or its chat turn's, whichever source ranks higher: user > verifier > judge) is at
   least `min_reward`; no reward at all is `unrewarded`;
3. `no snapshot` / `too big`: it recorded the workspace it started from (a snapshot that can be
   restored) of at most `max_workspace_bytes`; `unreadable workspace`: one without symlinks
   or other files a task cannot hold;
4. `no commands`: its recorded actions ran at least one command: the reference is those
   commands, in order (replies that were not valid actions ran nothing and add nothing);
5. `refused`: no reference command is one the command policy denies; `network`: none uses the
   network: a command the policy's network rules flag (upload, raw socket, remote host, remote
   script), one naming a URL on another host, or one that fetches through a package manager or
   git (`pip install`, `apt-get install`, `git clone`, ...). Replays run without a network;
6. `already harvested`: not an episode in `already` (task ids harvested before), nor the same
   task as one accepted earlier in this harvest (same instruction, commands, and workspace
   files: contents and executable bits, file times aside);
7. `nondeterministic`: the reference, replayed twice in fresh sandboxes, gives the same outcome
   (file changes and answer, learner/tasks/outcome.py), else it depends on time or randomness;
8. `unsound`: with that outcome as its check, the reference scores 1 and an empty attempt 0
   (`check_task`, as `temper tasks check` does).

Every replay runs in a fresh isolating sandbox (`isolating_backend`: docker or bwrap; `local`
only when the caller passes it by name). Accepted tasks are split by time within each kind of
task (runtime/executor/kinds.py): of a kind's tasks, the newest `heldout_fraction` (by episode
time) are "heldout", the rest "train", with at least one of each when the kind has two or more
and the fraction is not 0; the kinds seen once are split so together, as one group. Split per
kind, every kind the user asks for twice is measured on held-out tasks of its own, which is what
routing reads; a plain time split held out only the day's last requests, and left most kinds
unmeasured.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from learner.tasks.attempts import isolating_backend, observe_outcome, start_state
from learner.tasks.file_tree import read_tree
from learner.tasks.soundness import check_task
from learner.tasks.task import OUTCOME_VERIFIER, Task, TaskFormatError
from memory import REWARD_RANK, ExecutorEpisode, MemoryStore, RecordedCall, UnknownRecordError
from runtime.executor import TaskKinds
from runtime.executor.actions import ActionParseError, Command, parse_action
from runtime.policy import assess
from runtime.sandbox import BackendName, SandboxOptions, Snapshot, SnapshotError, open_sandbox

if TYPE_CHECKING:
    from learner.sft import SFTExample

FAMILY = "episode"
SECRET, UNREWARDED, FAILED = "secret", "unrewarded", "failed"
NO_SNAPSHOT, TOO_BIG, UNREADABLE = "no snapshot", "too big", "unreadable workspace"
NO_COMMANDS, REFUSED, NETWORK = "no commands", "refused", "network"
ALREADY, NONDETERMINISTIC, UNSOUND = "already harvested", "nondeterministic", "unsound"
REASONS = {  # reason -> how the report line says it, in the order of the checks
    SECRET: "held a secret",
    UNREWARDED: "had no reward",
    FAILED: "failed",
    NO_SNAPSHOT: "had no snapshot",
    TOO_BIG: "had a workspace over the size limit",
    UNREADABLE: "had a workspace a task cannot hold",
    NO_COMMANDS: "ran no commands",
    REFUSED: "ran a command the policy refuses",
    NETWORK: "used the network",
    ALREADY: "were already harvested",
    NONDETERMINISTIC: "were nondeterministic",
    UNSOUND: "were unsound",
}
NETWORK_RULES = frozenset(
    {"upload", "raw-socket", "remote-host", "remote-script"}
)  # runtime/policy/network.py
_REMOTE_URL = re.compile(
    r"\b(?:https?|ftps?|git|ssh|rsync|wss?)://(?!(?:localhost|127(?:\.\d+){3}|0\.0\.0\.0|\[::1\])(?:[:/]|\s|$))",
    re.IGNORECASE,
)
_FETCHING = re.compile(
    r"(?:^|[\s;&|(])(?:(?:pip3?|uv\s+pip|npm|pnpm|yarn|gem|cargo|apt-get|apt|apk|dnf|yum|brew)\s+"
    r"(?:install|add|update|upgrade|download|fetch)|go\s+(?:get|install)|git\s+(?:clone|fetch|pull|push)"
    r"|docker\s+(?:pull|push))\b"
)


@dataclass(frozen=True)
class HarvestSettings:
    min_reward: float = 0.8  # the learning reward an episode needs to count as successful
    max_workspace_bytes: int = 16 << 20  # the start snapshot's size limit
    heldout_fraction: float = 0.25  # the newest share of the accepted tasks, held out

    def __post_init__(self) -> None:
        if not 0.0 <= self.heldout_fraction < 1.0:
            raise ValueError(f"heldout_fraction must be in [0, 1); got {self.heldout_fraction}")


@dataclass
class Harvest:
    """What a harvest found: its tasks (oldest episode first), and why the others were left out."""

    considered: int = 0  # live executor episodes in the window
    tasks: list[Task] = field(default_factory=list)
    excluded: list[tuple[int, str]] = field(default_factory=list)  # (episode id, reason)

    def counts(self) -> dict[str, int]:
        """Excluded episodes by reason, in the order the checks run; reasons with none left out."""
        counts = dict.fromkeys(REASONS, 0)
        for _, reason in self.excluded:
            counts[reason] += 1
        return {reason: count for reason, count in counts.items() if count}

    def line(self) -> str:
        head = f"{len(self.tasks)} of the day's {self.considered} episodes became tasks"
        counts = self.counts()
        if not counts:
            return head
        return (
            head
            + "; excluded: "
            + ", ".join(f"{count} {REASONS[reason]}" for reason, count in counts.items())
        )


def episode_reward(store: MemoryStore, episode: ExecutorEpisode) -> tuple[float | None, str | None]:
    """The reward an executor episode learns from, and its source: its own, or its chat turn's
    (`parent_episode_id`) when that ranks higher (user > verifier > judge); its own on a tie."""
    rewards = [(episode.reward, episode.reward_source)]
    if episode.parent_episode_id is not None:
        parent = store.episodes.get(episode.parent_episode_id)
        rewards.append((parent.reward, parent.reward_source))
    scored = [(reward, source) for reward, source in rewards if reward is not None]
    if not scored:
        return None, None
    return max(scored, key=lambda pair: REWARD_RANK.get(pair[1] or "", 0))


def recorded_commands(calls: list[RecordedCall]) -> list[Command]:
    """The commands an episode ran, in order, read back from its calls' actions."""
    commands: list[Command] = []
    for call in calls:
        try:
            commands.extend(parse_action(call.text).commands)
        except ActionParseError:
            continue  # the loop ran nothing for it
    return commands


def network_use(command: str) -> str | None:
    """Why `command` needs the network (in words), or None when nothing says it does."""
    verdict = assess(command)
    if verdict.rules & NETWORK_RULES:
        return verdict.reason
    if _REMOTE_URL.search(command):
        return "it names a URL on another host"
    if _FETCHING.search(command):
        return "it fetches packages or code"
    return None


async def harvest_episodes(
    store: MemoryStore,
    snapshot_dir: Path,
    *,
    since: float,
    until: float | None = None,
    settings: HarvestSettings | None = None,
    backend: BackendName = "auto",
    options: SandboxOptions | None = None,
    already: Collection[str] = (),
) -> Harvest:
    """The live executor episodes created in [since, until) as tasks; see the module docstring.
    `already`: ids of tasks harvested before (an episode is one task, once)."""
    settings = settings or HarvestSettings()
    backend = await isolating_backend(backend, options)
    harvest = Harvest()
    accepted: list[tuple[float, Task]] = []
    keys: set[tuple[object, ...]] = set()
    summaries = store.trajectories.summaries(since=since, until=until, split="live", limit=None)
    for episode in reversed([summary.episode for summary in summaries]):  # oldest first
        harvest.considered += 1
        task, reason = await _candidate(store, Path(snapshot_dir), episode, settings, backend, options)
        if task is not None:
            key = (task.instruction, tuple(sorted(start_state(task).items())), task.reference)
            if task.id in already or key in keys:
                task, reason = None, ALREADY
            else:
                keys.add(key)
                task, reason = await _checked(task, backend, options)
        if task is None:
            harvest.excluded.append((episode.id, reason))
        else:
            accepted.append((episode.created_at, task))
    oldest_first = [task for _, task in sorted(accepted, key=lambda pair: pair[0])]
    harvest.tasks = _time_split(oldest_first, settings, TaskKinds(store).kind_of)
    return harvest


async def _candidate(
    store: MemoryStore,
    snapshot_dir: Path,
    episode: ExecutorEpisode,
    settings: HarvestSettings,
    backend: BackendName,
    options: SandboxOptions | None,
) -> tuple[Task | None, str]:
    """The episode as a task before any replay, or (None, why not)."""
    if episode.contains_secret:
        return None, SECRET
    reward, _ = episode_reward(store, episode)
    if reward is None:
        return None, UNREWARDED
    if episode.status != "succeeded" or reward < settings.min_reward:
        return None, FAILED
    if episode.snapshot_id is None:
        return None, NO_SNAPSHOT
    if (episode.snapshot_bytes or 0) > settings.max_workspace_bytes:
        return None, TOO_BIG
    recorded = recorded_commands(store.trajectories.calls(episode.id))
    commands = [command.keystrokes for command in recorded]
    if not commands:
        return None, NO_COMMANDS
    if any(assess(command).action == "deny" for command in commands):
        return None, REFUSED
    if any(network_use(command) for command in commands):
        return None, NETWORK
    try:
        snapshot = Snapshot.load(snapshot_dir, episode.snapshot_id)
        async with open_sandbox(backend, options=options, workspace=snapshot) as sandbox:
            files, executable = await asyncio.to_thread(read_tree, sandbox.workspace)
    except SnapshotError:
        return None, NO_SNAPSHOT
    except TaskFormatError:
        return None, UNREADABLE
    return Task(
        id=f"ep{episode.id}",
        family=FAMILY,
        instruction=episode.task,
        files=files,
        verifier=OUTCOME_VERIFIER,
        reference=tuple(commands),
        timeout_s=max(command.timeout_s for command in recorded),
        source=f"episode:{episode.id}",
        executable=executable,
        tags=(FAMILY,),
    ), ""


async def _checked(
    task: Task, backend: BackendName, options: SandboxOptions | None
) -> tuple[Task | None, str]:
    """The task with its reference outcome when the reference is deterministic and sound."""
    first = await observe_outcome(task, task.reference, backend, options)
    second = await observe_outcome(task, task.reference, backend, options)
    if first != second:
        return None, NONDETERMINISTIC
    task = replace(task, outcome=first)
    check = await check_task(task, backend, options)
    if check.sound is not True:
        return None, UNSOUND
    return task, ""


async def heldout_again(
    store: MemoryStore,
    snapshot_dir: Path,
    episode_ids: Collection[int],
    *,
    settings: HarvestSettings | None = None,
    backend: BackendName = "auto",
    options: SandboxOptions | None = None,
) -> list[Task]:
    """The episodes of earlier nights' held-out tasks, as held-out tasks again, checked as a
    harvest checks them (their outcome replayed afresh): the user's held-out set grows night by
    night with tasks no night trained on. Episodes that no longer pass (their snapshot gone,
    or forgotten) are left out."""
    settings = settings or HarvestSettings()
    backend = await isolating_backend(backend, options)
    tasks = []
    for episode_id in episode_ids:
        try:
            episode = store.trajectories.executor_episode(episode_id)
        except UnknownRecordError:
            continue  # the episode was deleted since
        task, _ = await _candidate(store, Path(snapshot_dir), episode, settings, backend, options)
        if task is not None:
            task, _ = await _checked(task, backend, options)
        if task is not None:
            tasks.append(replace(task, split="heldout"))
    return tasks


def _time_split(tasks: list[Task], settings: HarvestSettings, kind_of: Callable[[str], str]) -> list[Task]:
    """`tasks` (oldest first, the order kept) with the newest `heldout_fraction` of each kind's
    marked heldout, the rest train; see the module docstring."""
    by_kind: dict[str, list[int]] = {}
    for index, task in enumerate(tasks):
        by_kind.setdefault(kind_of(task.instruction), []).append(index)
    groups = [indices for indices in by_kind.values() if len(indices) > 1]
    groups.append(sorted(i for indices in by_kind.values() if len(indices) == 1 for i in indices))
    heldout: set[int] = set()
    for indices in groups:
        count = len(indices)
        share = round(count * settings.heldout_fraction)
        if settings.heldout_fraction > 0 and count >= 2:
            share = min(max(share, 1), count - 1)
        heldout.update(indices[count - share :] if share else ())
    return [replace(task, split="heldout" if i in heldout else "train") for i, task in enumerate(tasks)]


def distillation_examples(
    store: MemoryStore,
    *,
    since: float,
    until: float | None = None,
    min_reward: float = HarvestSettings.min_reward,
) -> list[SFTExample]:
    """The planner's calls in successful live executor episodes (learning reward at least
    `min_reward`; secret-marked episodes never) as supervised targets: the chat it was given and
    the action it wrote, when that parses as an action. Text only: the trainer encodes it with
    the executor's tokenizer."""
    from learner.sft import SFTExample

    examples = []
    for trajectory in store.trajectories.read(since=since, until=until, split="live"):
        episode = trajectory.episode
        reward, _ = episode_reward(store, episode)
        if episode.status != "succeeded" or reward is None or reward < min_reward:
            continue
        for call in trajectory.calls:
            if call.role == "planner" and call.messages and _is_action(call.text):
                examples.append(SFTExample(list(call.messages), call.text))
    return examples


def _is_action(text: str) -> bool:
    try:
        parse_action(text)
    except ActionParseError:
        return False
    return True
