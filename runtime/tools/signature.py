"""Turning a typed Python function into a tool: an arguments model and a compact JSON schema.

A tool is a plain function, sync or async, whose parameters are annotated; the first line of its
docstring is the description the model reads. A parameter annotated `ToolContext` (any name) is
filled in by the runtime and is not part of the schema. Constraints go in the annotation, e.g.
`limit: Annotated[int, Field(ge=1, le=20)] = 5`, and are both validated and shown.

Every schema token is paid on every model call, so the schema is pydantic's minus the noise:
no titles, no `additionalProperties`, `X | None` written as X, no empty `required`.

Invariants: a function without a docstring, with `*args`/`**kwargs`, or with an unannotated
parameter is refused at registration (TypeError), not at call time; arguments the schema does
not name are rejected (`extra="forbid"`), so a misspelt argument is an error the model sees.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from runtime.tools.context import ToolContext

_NOISE = ("title", "additionalProperties")


@dataclass(frozen=True)
class Tool:
    """A function the planner can call, with its validated arguments model."""

    name: str
    description: str
    function: Callable[..., Any]
    arguments: type[BaseModel]
    context_parameter: str | None  # the parameter that receives the ToolContext, if any

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling schema."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": compact_schema(self.arguments.model_json_schema()),
            },
        }

    def usage(self) -> str:
        """The call as a signature for error messages: `f(path: string, limit: integer = 200)`."""
        properties = self.schema()["function"]["parameters"].get("properties", {})
        parts = []
        for name, spec in properties.items():
            part = f"{name}: {spec.get('type', 'any')}"
            if "default" in spec:
                part += f" = {json.dumps(spec['default'])}"
            parts.append(part)
        return f"{self.name}({', '.join(parts)})"

    async def invoke(self, arguments: BaseModel, context: ToolContext) -> Any:
        kwargs = {name: getattr(arguments, name) for name in type(arguments).model_fields}
        if self.context_parameter is not None:
            kwargs[self.context_parameter] = context
        result = self.function(**kwargs)
        return await result if inspect.isawaitable(result) else result


def tool(function: Callable[..., Any], *, name: str | None = None) -> Tool:
    """The `Tool` for `function` (its name, its docstring's first line, its parameters)."""
    name = name or function.__name__
    doc = inspect.getdoc(function)
    if not doc:
        raise TypeError(f"tool {name} needs a docstring: its first line is the description")
    hints = typing.get_type_hints(function, include_extras=True)
    fields: dict[str, Any] = {}
    context_parameter = None
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"tool {name}: *args and **kwargs cannot be described to a model")
        if parameter.name not in hints:
            raise TypeError(f"tool {name}: parameter {parameter.name} needs a type annotation")
        annotation = hints[parameter.name]
        if annotation is ToolContext:
            context_parameter = parameter.name
            continue
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    return Tool(name, doc.splitlines()[0].strip(), function, model, context_parameter)


def compact_schema(schema: Any) -> Any:
    """`schema` without titles and other keys that cost tokens and tell the model nothing."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _NOISE or (key == "required" and not value):
            continue
        if key == "properties":
            out[key] = {name: compact_schema(spec) for name, spec in value.items()}
        elif key == "anyOf" and _is_optional(value):
            out.update(compact_schema(next(v for v in value if v.get("type") != "null")))
        else:
            out[key] = compact_schema(value)
    return out


def _is_optional(variants: list[Any]) -> bool:
    return len(variants) == 2 and {"type": "null"} in variants
