"""Putting an agent together from the config: the composition root's one recipe.

Every way in (the CLI chat, later the daemon's Telegram and Slack connectors) builds its
`Agent` here, so they share one memory, one model setup and one sandbox policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
import os

from connectors.config import Config, ModelSlot
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
    store = MemoryStore.open(config.memory.db_path)
    options = SandboxOptions(
        limits=Limits(memory_bytes=config.sandbox.memory_mb << 20),
        network=config.sandbox.network,
    )
    workspaces = Workspaces(
        config.sandbox.backend, options, config.data_dir / "snapshots", store.set_workspace_snapshot
    )
    agent = Agent(store, planner, builtin_toolbox(), workspaces, judge=judge, settings=AgentSettings(stream=stream))
    return Assembled(agent, store, notes)


def _override(slot: ModelSlot, model: str | None, api_base: str | None) -> ModelSlot:
    changes: dict[str, object] = {}
    if model is not None:
        changes["model"] = model
    if api_base is not None:
        changes["api_base"] = api_base
    return slot.model_copy(update=changes) if changes else slot
