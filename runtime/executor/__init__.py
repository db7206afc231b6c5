"""The executor: a small model that does terminal work in a sandbox, and its backends.

Backends (each `complete(messages, sampling) -> Completion`, see completion.py):

    LocalBackend     an in-process Hugging Face causal LM (+ PEFT LoRA adapters)
    OpenAIBackend    any OpenAI-compatible server: vLLM, `temper serve executor`
    PlannerBackend   the planner standing in while no executor model exists

`LocalBackend` and `OpenAIBackend` are also `AdapterHost`s (load / use / unload adapters by
version); `ModelSwitch` (switch.py) changes their version while the agent runs, each run pinned
to the version it started on. `TaskKinds` (kinds.py) groups instructions into kinds of tasks and
`Router` (routing.py) sends each kind to the executor model or the planner by measured success. `ExecutorServer` is `temper serve executor`; `build_tiny_model` makes a small model
offline. Logprobs everywhere are raw model log-probabilities (sampling.py says why).

Exceptions (errors.py): ExecutorError > ExecutorLoadError, ExecutorRequestError, ExecutorCallError.

torch, transformers, peft and aiohttp load only when `LocalBackend`, `LocalModel` or
`ExecutorServer` is first used (PEP 562 `__getattr__` below), so importing this package stays cheap.
"""

from typing import TYPE_CHECKING, Any

from runtime.executor.adapter_host import AdapterHost
from runtime.executor.completion import Completion, ExecutorBackend, SamplingParams
from runtime.executor.errors import (
    ExecutorCallError,
    ExecutorError,
    ExecutorLoadError,
    ExecutorRequestError,
)
from runtime.executor.kinds import TaskKinds
from runtime.executor.openai_backend import OpenAIBackend
from runtime.executor.planner_backend import PlannerBackend
from runtime.executor.routing import Decision, Router, RoutingSettings
from runtime.executor.switch import ModelSwitch
from runtime.executor.tiny import build_tiny_model
from runtime.executor.tokenization import ExecutorTokenizer

if TYPE_CHECKING:
    from runtime.executor.local_backend import LocalBackend
    from runtime.executor.local_model import LocalModel
    from runtime.executor.server import ExecutorServer

_HEAVY = {
    "LocalBackend": "runtime.executor.local_backend",
    "LocalModel": "runtime.executor.local_model",
    "ExecutorServer": "runtime.executor.server",
}

__all__ = [
    "AdapterHost",
    "Completion",
    "Decision",
    "ExecutorBackend",
    "ExecutorCallError",
    "ExecutorError",
    "ExecutorLoadError",
    "ExecutorRequestError",
    "ExecutorServer",
    "ExecutorTokenizer",
    "LocalBackend",
    "LocalModel",
    "ModelSwitch",
    "OpenAIBackend",
    "PlannerBackend",
    "Router",
    "RoutingSettings",
    "SamplingParams",
    "TaskKinds",
    "build_tiny_model",
]


def __getattr__(name: str) -> Any:
    if name in _HEAVY:
        import importlib

        return getattr(importlib.import_module(_HEAVY[name]), name)
    raise AttributeError(f"module 'runtime.executor' has no attribute {name!r}")
