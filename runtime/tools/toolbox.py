"""The `Toolbox`: the tools one agent offers, their schemas, and the one way to call them.

`call(name, arguments, context)` never lets a model mistake escape: an unknown tool name,
arguments that are not a JSON object, arguments that fail validation, and a `ToolError` raised
by the tool all come back as `ToolResult(text="Error: ...", is_error=True)` saying what was wrong
and what is expected. Anything else a tool raises (a bug, a dead sandbox) propagates.

Invariants: every result's text is at most `max_output_chars` characters plus a one-line marker
(head and tail kept); every result carries the call's duration; `schemas()` lists tools in the
order they were added, so the prompt prefix (and the provider's prompt cache) stays stable.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from runtime.tools.context import ToolContext
from runtime.tools.result import ToolError, ToolResult, bound_text
from runtime.tools.signature import Tool, tool

DEFAULT_MAX_OUTPUT_CHARS = 10_000  # about 2,500 tokens: enough for a screen of output


class Toolbox:
    def __init__(
        self,
        tools: Iterable[Callable[..., Any] | Tool] = (),
        *,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    ) -> None:
        self._schema_json: str | None = None
        if max_output_chars < 100:
            raise ValueError(f"max_output_chars must be at least 100, got {max_output_chars}")
        self.max_output_chars = max_output_chars
        self._tools: dict[str, Tool] = {}
        for item in tools:
            self.add(item)

    def add(self, function: Callable[..., Any] | Tool) -> Tool:
        """Offer `function` (or a ready `Tool`) to the model; names must be unique."""
        added = function if isinstance(function, Tool) else tool(function)
        if added.name in self._tools:
            raise ValueError(f"a tool named {added.name} is already in the toolbox")
        self._tools[added.name] = added
        self._schema_json = None
        return added

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def schemas(self) -> list[dict[str, Any]]:
        """The tools as OpenAI function-calling schemas, in the order they were added.

        Built once (pydantic's schema generation costs ~0.5 ms a tool, on every planner call
        otherwise) and handed out as fresh objects, so a caller that edits them edits a copy.
        """
        return json.loads(self.schema_json())

    def schema_json(self) -> str:
        """The schemas as compact JSON: what their prompt overhead is measured on."""
        if self._schema_json is None:
            schemas = [item.schema() for item in self._tools.values()]
            self._schema_json = json.dumps(schemas, separators=(",", ":"), ensure_ascii=False)
        return self._schema_json

    async def call(
        self, name: str, arguments: str | Mapping[str, Any] | None, context: ToolContext
    ) -> ToolResult:
        """Validate `arguments` (JSON text or a mapping) and run the tool called `name`."""
        started = time.perf_counter()
        try:
            chosen = self._tool(name)
            output = await chosen.invoke(_validated(chosen, arguments), context)
            text, is_error = str(output), False
        except ToolError as error:
            text, is_error = f"Error: {error}", True
        bounded, elided = bound_text(text, self.max_output_chars)
        return ToolResult(bounded, is_error, time.perf_counter() - started, elided)

    def _tool(self, name: str) -> Tool:
        if name not in self._tools:
            known = ", ".join(self._tools)
            raise ToolError(f"there is no tool named {name!r}; the tools are {known}")
        return self._tools[name]


def _validated(chosen: Tool, arguments: str | Mapping[str, Any] | None) -> Any:
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        raw: Any = {}
    elif isinstance(arguments, str):
        try:
            raw = json.loads(arguments)
        except json.JSONDecodeError as error:
            raise ToolError(
                f"the arguments for {chosen.name} are not valid JSON ({error}); "
                f"send one JSON object: {chosen.usage()}"
            ) from None
    else:
        raw = dict(arguments)
    if not isinstance(raw, dict):
        raise ToolError(
            f"the arguments for {chosen.name} must be a JSON object, got {type(raw).__name__}; "
            f"expected {chosen.usage()}"
        )
    try:
        return chosen.arguments.model_validate(raw)
    except ValidationError as error:
        raise ToolError(
            f"bad arguments for {chosen.name}: {_explain(error)}. Expected {chosen.usage()}"
        ) from None


def _explain(error: ValidationError) -> str:
    problems = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "arguments"
        if problem["type"] == "missing":
            problems.append(f"{where} is missing")
        elif problem["type"] == "extra_forbidden":
            problems.append(f"{where} is not an argument")
        else:
            shown = repr(problem.get("input"))
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            problems.append(f"{where}: {problem['msg'].lower()} (got {shown})")
    return "; ".join(problems)
