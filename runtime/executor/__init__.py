"""The executor: a small model that does terminal work in a sandbox, and its backends."""

from runtime.executor.completion import Completion, ExecutorBackend, SamplingParams

__all__ = ["Completion", "ExecutorBackend", "SamplingParams"]
