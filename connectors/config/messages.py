"""How configuration problems and secrets are shown to people.

``describe`` turns one pydantic error into one line: which key, what was given, what would be
right, and which file or variable set it. It works on any tree of pydantic models (the root is
passed in): a field's ``description`` states what a right value looks like and is quoted after
"must be"; a validator's ``ValueError`` text is quoted the same way. ``mask`` (memory/secrets.py)
is the only way a secret is ever shown: its kind and at most its last four characters.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from memory import mask

Loc = tuple[Any, ...]  # a pydantic error location: key names, and list indices as ints


def describe(
    error: ErrorDetails,
    root: type[BaseModel],
    sources: Mapping[tuple[str, ...], str],
    masked_keys: frozenset[str],
) -> str:
    """One line for one error. Values under a key in ``masked_keys`` are shown masked."""
    loc = tuple(error["loc"])
    origin = _origin(loc, sources)
    if error["type"] == "extra_forbidden":
        parent, name = loc[:-1], str(loc[-1])
        where = f"{dotted(parent)}: " if parent else ""
        known = _known_keys(root, parent)
        return f"{where}unknown key {name!r}{suggest(name, known)}{origin}"
    field = field_at(root, loc)
    if error["type"] == "value_error" and "error" in error.get("ctx", {}):
        expected = str(error["ctx"]["error"])
    elif field is not None and field.description:
        expected = field.description
    else:
        expected = error["msg"][0].lower() + error["msg"][1:]
    given = error.get("input")
    if error["type"] == "value_error" and isinstance(given, Mapping):
        # A table's own check (or the whole file's, at no location): its text says it whole.
        return f"{dotted(loc)}: {expected}{origin}" if loc else expected
    hint = ""
    if error["type"] == "literal_error" and field is not None:  # `expected` lists the choices
        hint = did_you_mean(str(given), [str(option) for option in typing.get_args(field.annotation)])
    shown = _shown(loc, given, masked_keys)
    return f"{dotted(loc)}: must be {expected}, got {shown}{hint}{origin}"


def suggest(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for a close candidate, else the list of candidates."""
    options = sorted(candidates)
    if close := did_you_mean(word, options):
        return close
    return f" (known keys: {', '.join(options)})" if options else ""


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for a close candidate, else nothing."""
    close = difflib.get_close_matches(word, sorted(candidates), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def dotted(loc: Loc) -> str:
    """``("models", "planner", "fallbacks", 0)`` -> ``models.planner.fallbacks[0]``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def field_at(root: type[BaseModel], loc: Loc) -> FieldInfo | None:
    """The field a location points at (list indices skipped), or None if there is none."""
    names = [part for part in loc if isinstance(part, str)]
    if not names:
        return None
    parent = _model_at(root, tuple(names[:-1]))
    return parent.model_fields.get(names[-1]) if parent is not None else None


def _shown(loc: Loc, value: object, masked_keys: frozenset[str]) -> str:
    if {part for part in loc if isinstance(part, str)} & masked_keys:
        return mask(str(value))
    if isinstance(value, dict):
        return "a table"
    return repr(value)


def _origin(loc: Loc, sources: Mapping[tuple[str, ...], str]) -> str:
    for end in range(len(loc), 0, -1):
        if loc[:end] in sources:
            return f" ({sources[loc[:end]]})"
    return ""


def _model_at(root: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    model: type[BaseModel] | None = root
    for part in loc:
        if isinstance(part, int):
            continue
        if model is None or part not in model.model_fields:
            return None
        model = _as_model(model.model_fields[part].annotation)
    return model


def _known_keys(root: type[BaseModel], loc: Loc) -> list[str]:
    model = _model_at(root, loc)
    return list(model.model_fields) if model is not None else []


def _as_model(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None
