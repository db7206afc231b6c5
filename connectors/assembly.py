"""Putting an agent together from the config: the composition root's one recipe.

Every way in (the CLI chat, later the daemon's Telegram and Slack connectors) builds its
`Agent` here, so they share one memory, one model setup and one sandbox policy.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from connectors.config import Config, ConfigError, ModelSlot
from connectors.redaction import open_memory
from memory import MemoryStore
from runtime import (
    Agent,
    AgentSettings,
    ChatModel,
    Limits,
    ModelAuthError,
    SandboxOptions,
    Workspaces,
    builtin_toolbox,
    model_from_slot,
)
from runtime.executor import ExecutorBackend, OpenAIBackend, PlannerBackend
from runtime.executor.loop import ExecutorSettings
from runtime.executor.recording import MemoryRecorder
from runtime.executor.terminal import TerminalExecutor
from runtime.models.slots import resolve_api_key


@dataclass
class Assembled:
    agent: Agent
    store: MemoryStore
    notes: list[str]  # one line each: what works differently than configured, and why


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
    toolbox = builtin_toolbox(executor=terminal is not None)
    agent = Agent(
        store,
        planner,
        toolbox,
        workspaces,
        judge=judge,
        settings=AgentSettings(stream=stream, command_timeout_s=config.sandbox.timeout_s),
        terminal=terminal,
    )
    return Assembled(agent, store, notes)


def build_executor(
    config: Config, environ: Mapping[str, str], store: MemoryStore, planner: ChatModel
) -> TerminalExecutor:
    """terminal_task's executor: the configured executor model, with the planner standing in
    until the model's held-out success reaches the threshold (or when there is no model)."""
    settings = config.executor
    tokenizer_dir = settings.model_dir
    stand_in = PlannerBackend(planner, tokenizer_dir=tokenizer_dir)
    model: ExecutorBackend | None = None
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

        loaded = LocalModel.load(settings.model_dir)
        if settings.adapter_dir is not None:
            loaded.load_adapter("configured", settings.adapter_dir)
        model = LocalBackend(loaded, adapter="configured" if settings.adapter_dir is not None else None)

    def heldout_success() -> float | None:
        if model is None:
            return None
        return store.trajectories.heldout_success(_model_name(model), getattr(model, "adapter_version", None))

    return TerminalExecutor(
        stand_in,
        ExecutorSettings(max_turns=settings.max_turns),
        model=model,
        threshold=settings.threshold,
        heldout_success=heldout_success,
        recorder=MemoryRecorder(store, config.data_dir / "snapshots"),
    )


def _model_name(backend: ExecutorBackend) -> str:
    """The model name the backend's Completions carry (OpenAIBackend: a string; LocalBackend:
    a loaded model with a name)."""
    model = getattr(backend, "model", None)
    return model if isinstance(model, str) else str(getattr(model, "name", backend.name))


def _override(slot: ModelSlot, model: str | None, api_base: str | None) -> ModelSlot:
    changes: dict[str, object] = {}
    if model is not None:
        changes["model"] = model
    if api_base is not None:
        changes["api_base"] = api_base
    return slot.model_copy(update=changes) if changes else slot
