"""Putting an agent together from the config: the composition root's one recipe.

Every way in (the CLI chat, later the daemon's Telegram and Slack connectors) builds its
`Agent` here, so they share one memory, one model setup and one sandbox policy.

The executor model serves the current trained version (`<data_dir>/executor/current`, moved by
promotion and `temper executor rollback`), else `[executor] adapter_dir` (as version
"configured"), else its base model. `follow_current_version` brings a running agent up to date
without a restart; the daemon calls it every few seconds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from connectors.config import Config, ConfigError, ModelSlot
from connectors.redaction import open_memory
from memory import MemoryStore
from runtime import (
    Agent,
    AgentSettings,
    ChatModel,
    ContextSettings,
    Limits,
    ModelAuthError,
    SandboxOptions,
    SkillCatalog,
    SkillSettings,
    UserModelSettings,
    Workspaces,
    builtin_toolbox,
    model_from_slot,
)
from runtime.executor import (
    ModelSwitch,
    OpenAIBackend,
    PlannerBackend,
    Router,
    RoutingSettings,
    SamplingParams,
)
from runtime.executor.loop import ExecutorSettings
from runtime.executor.recording import MemoryRecorder
from runtime.executor.terminal import TerminalExecutor
from runtime.models.slots import resolve_api_key

if TYPE_CHECKING:
    from runtime.executor import LocalBackend

CONFIGURED_ADAPTER = "configured"  # the version name of `[executor] adapter_dir`


@dataclass
class Assembled:
    agent: Agent
    store: MemoryStore
    notes: list[str]  # one line each: what works differently than configured, and why
    terminal: TerminalExecutor | None = None  # terminal_task's executor, when enabled


def build_agent(
    config: Config,
    environ: Mapping[str, str] | None = None,
    *,
    model: str | None = None,
    api_base: str | None = None,
    stream: bool = True,
) -> Assembled:
    """The agent for `config`; `model` and `api_base` override the planner slot (CLI flags).

    Raises ModelAuthError when the planner has no key; a judge without one is left out, with
    a note, since turns still work unscored.
    """
    environ = os.environ if environ is None else environ
    planner_slot = _override(config.models.planner, model, api_base)
    planner = model_from_slot(planner_slot, environ)
    notes: list[str] = []
    judge: ChatModel | None = None
    try:
        judge = model_from_slot(config.models.judge, environ)
    except ModelAuthError as error:
        notes.append(f"judge off: {error}")
    store = open_memory(config, environ)
    options = SandboxOptions(
        limits=Limits(memory_bytes=config.sandbox.memory_mb << 20),
        network=config.sandbox.network,
    )
    workspaces = Workspaces(
        config.sandbox.backend, options, config.data_dir / "snapshots", store.set_workspace_snapshot
    )
    terminal = build_executor(config, environ, store, planner) if config.executor.enabled else None
    skills = build_skills(config, store) if config.skills.enabled else None
    toolbox = builtin_toolbox(executor=terminal is not None, skills=skills)
    agent = Agent(
        store,
        planner,
        toolbox,
        workspaces,
        judge=judge,
        settings=AgentSettings(
            stream=stream,
            command_timeout_s=config.sandbox.timeout_s,
            context=ContextSettings(profile_tokens=config.users.profile_tokens),
            user_model=UserModelSettings(
                every_turns=config.users.extraction_every_turns,
                idle_end_s=config.users.session_idle_end_s,
            ),
        ),
        terminal=terminal,
        skills=skills,
        direct=terminal.run_direct
        if terminal is not None and terminal.model is not None and config.executor.direct_route
        else None,
    )
    return Assembled(agent, store, notes, terminal)


def build_skills(config: Config, store: MemoryStore) -> SkillCatalog:
    """The skill library under `<data_dir>/skills`, kept in step with memory's index."""
    from skills import SkillLibrary

    settings = config.skills
    catalog = SkillCatalog(
        SkillLibrary(config.data_dir / "skills"),
        store,
        SkillSettings(
            prompt_tokens=settings.prompt_tokens,
            review=settings.review,
            min_tool_calls=settings.min_tool_calls,
            min_uses=settings.min_uses,
        ),
    )
    catalog.sync()
    return catalog


def build_executor(
    config: Config, environ: Mapping[str, str], store: MemoryStore, planner: ChatModel
) -> TerminalExecutor:
    """terminal_task's executor: the configured executor model serving the current version
    (a local model loads it here; a server is told by `follow_current_version`), routed per kind
    of task by measured competence, with the planner standing in where the model is not good
    enough yet (or when there is none)."""
    settings = config.executor
    tokenizer_dir = settings.model_dir
    stand_in = PlannerBackend(planner, tokenizer_dir=tokenizer_dir)
    model: LocalBackend | OpenAIBackend | None = None
    if settings.backend == "openai":
        slot = config.models.executor
        if slot.api_base is None:
            raise ConfigError(
                ["executor.backend = 'openai' needs models.executor.api_base (an OpenAI-compatible server)"]
            )
        model = OpenAIBackend(
            slot.api_base,
            slot.model.split("/", 1)[1] if slot.model.startswith(("openai/", "hosted_vllm/")) else slot.model,
            api_key=resolve_api_key(slot, environ) or None,
            tokenizer_dir=tokenizer_dir,
        )
    elif settings.backend == "local":
        if settings.model_dir is None:
            raise ConfigError(
                ["executor.backend = 'local' needs executor.model_dir (a Hugging Face model directory)"]
            )
        from runtime.executor import LocalBackend, LocalModel  # torch: only when a local model is configured

        loaded = LocalModel.load(
            settings.model_dir,
            device=settings.device,
            dtype=settings.dtype,
            attn_implementation=settings.attn_implementation,
        )
        wanted = serving_version(config)
        if wanted is not None:
            loaded.load_adapter(*wanted)
        model = LocalBackend(loaded, adapter=None if wanted is None else wanted[0])
    routing = RoutingSettings(
        threshold=settings.threshold,
        margin=settings.routing_margin,
        exploration=settings.exploration,
        direct_similarity=settings.direct_similarity,
    )
    return TerminalExecutor(
        stand_in,
        ExecutorSettings(
            max_turns=settings.max_turns,
            sampling=SamplingParams(temperature=settings.temperature, max_tokens=512, constrained=True),
        ),
        switch=None if model is None else ModelSwitch(model),
        router=Router(store, routing),
        recorder=MemoryRecorder(store, config.data_dir / "snapshots"),
    )


def serving_version(config: Config) -> tuple[str, Path] | None:
    """The executor version that should serve, and its adapter directory: the version store's
    `current`, else `[executor] adapter_dir` as "configured", else None (the base model).
    Raises learner.versions.VersionError when the store is damaged."""
    from learner.versions import ExecutorVersions  # the learner's package: only with an executor model

    current = ExecutorVersions(config.data_dir).current()
    if current is not None:
        return current.name, current.directory
    if config.executor.adapter_dir is not None:
        return CONFIGURED_ADAPTER, config.executor.adapter_dir
    return None


async def follow_current_version(config: Config, terminal: TerminalExecutor | None) -> bool:
    """Make a running agent's executor serve `serving_version(config)` from its next run on
    (runs in flight finish on theirs); True when it switched. Nothing to do without a
    switchable executor model."""
    if terminal is None or terminal.switch is None:
        return False
    wanted = serving_version(config)
    if wanted is None:
        return await terminal.switch.activate(None)
    return await terminal.switch.activate(*wanted)


def _override(slot: ModelSlot, model: str | None, api_base: str | None) -> ModelSlot:
    changes: dict[str, object] = {}
    if model is not None:
        changes["model"] = model
    if api_base is not None:
        changes["api_base"] = api_base
    return slot.model_copy(update=changes) if changes else slot
