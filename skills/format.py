"""The SKILL.md format of the agentskills.io specification, as it is: parse, check, render.

A skill is a folder `<name>/SKILL.md` (plus optional `scripts/`, `references/`, `assets/`).
SKILL.md is YAML front matter between `---` lines, then a markdown body. The front matter has:

    name            required; 1-64 characters of a-z, 0-9 and single hyphens, no hyphen at
                    either end; equal to the folder's name
    description     required; 1-1024 characters: what the skill does and when to use it
    license         optional; a licence name or a bundled file
    compatibility   optional; at most 500 characters of environment requirements
    metadata        optional; a map of string keys to string values
    allowed-tools   optional (experimental); a space-separated string of tool names

and no other top-level key: temper's own fields (version, created-by, source-episode, trust,
pinned) live under `metadata`, as strings. The body is advised under ~500 lines (a warning, not
an error).

Invariant: `parse(render(document)) == document` for every valid document; the body is kept
byte for byte (no stripping), so a hand-written file round-trips through temper's writes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import yaml

from skills.errors import SkillFormatError

SKILL_FILE = "SKILL.md"
SPEC_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
ADVISED_BODY_LINES = 500
NAME_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_FRONT = re.compile(r"\A(?:\ufeff)?---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Problem:
    """One way a SKILL.md breaks the rules: an error makes it invalid, a warning is advice."""

    field: str
    message: str
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


@dataclass(frozen=True)
class SkillDocument:
    """One SKILL.md: its front matter fields and its markdown body."""

    name: str
    description: str
    body: str
    license: str | None = None
    compatibility: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    allowed_tools: str | None = None

    def meta(self, key: str, default: str = "") -> str:
        return self.metadata.get(key, default)

    def with_metadata(self, **updates: str | None) -> SkillDocument:
        """A copy whose metadata has `updates` (keys with `_` written as `-`; None deletes)."""
        merged = dict(self.metadata)
        for key, value in updates.items():
            if value is None:
                merged.pop(key.replace("_", "-"), None)
            else:
                merged[key.replace("_", "-")] = value
        return replace(self, metadata=merged)

    @property
    def version(self) -> int:
        text = self.metadata.get("version", "0")
        return int(text) if text.isdigit() else 0

    @property
    def trusted(self) -> bool:
        return self.metadata.get("trust", "trusted") == "trusted"

    @property
    def pinned(self) -> bool:
        return self.metadata.get("pinned", "false") == "true"

    def render(self) -> str:
        """The SKILL.md text of this document."""
        front: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.license is not None:
            front["license"] = self.license
        if self.compatibility is not None:
            front["compatibility"] = self.compatibility
        if self.allowed_tools is not None:
            front["allowed-tools"] = self.allowed_tools
        if self.metadata:
            front["metadata"] = dict(self.metadata)
        header = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=10_000)
        return f"---\n{header}---\n{self.body}"


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The front matter as a mapping and the body after it; SkillFormatError if there is none
    or it is not a YAML mapping."""
    match = _FRONT.match(text)
    if match is None:
        raise SkillFormatError(
            [Problem("front matter", "SKILL.md must start with a '---' line, YAML fields, then '---'")]
        )
    try:
        front = yaml.safe_load(match.group(1))
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f" (line {where.line + 2})" if where is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise SkillFormatError([Problem("front matter", f"is not valid YAML{line}: {problem}")]) from None
    if front is None:
        front = {}
    if not isinstance(front, dict):
        raise SkillFormatError(
            [Problem("front matter", "must be YAML fields (key: value), not a list or text")]
        )
    return front, text[match.end() :]


def check(front: Mapping[Any, Any], body: str, folder_name: str | None = None) -> list[Problem]:
    """Every problem with this front matter and body, errors and warnings, in field order."""
    problems: list[Problem] = []
    problems += _check_name(front.get("name"), folder_name)
    problems += _check_text(front.get("description"), "description", MAX_DESCRIPTION, required=True)
    if "license" in front:
        problems += _check_text(front["license"], "license", None, required=True)
    if "compatibility" in front:
        problems += _check_text(front["compatibility"], "compatibility", MAX_COMPATIBILITY, required=True)
    if "metadata" in front:
        problems += _check_metadata(front["metadata"])
    if "allowed-tools" in front and not isinstance(front["allowed-tools"], str):
        problems.append(
            Problem("allowed-tools", "must be one string of tool names separated by spaces, like 'Bash Read'")
        )
    for key in front:
        if key not in SPEC_KEYS:
            problems.append(
                Problem(
                    str(key),
                    f"is not a field of the specification (allowed: {', '.join(SPEC_KEYS)});"
                    " move it under metadata",
                )
            )
    lines = body.count("\n") + 1
    if lines > ADVISED_BODY_LINES:
        problems.append(
            Problem(
                "body",
                f"has {lines} lines; keep SKILL.md under {ADVISED_BODY_LINES} and move detail to references/",
                "warning",
            )
        )
    return problems


def _check_name(name: Any, folder_name: str | None) -> list[Problem]:
    if name is None:
        return [Problem("name", "is required: 1-64 characters of a-z, 0-9 and hyphens")]
    if not isinstance(name, str):
        return [Problem("name", f"must be text, got {type(name).__name__}")]
    problems = []
    if not 1 <= len(name) <= MAX_NAME:
        problems.append(Problem("name", f"must be 1-{MAX_NAME} characters, got {len(name)}"))
    if name and not NAME_PATTERN.fullmatch(name):
        problems.append(Problem("name", f"{name!r} {_name_fault(name)}"))
    if folder_name is not None and name != folder_name:
        problems.append(Problem("name", f"{name!r} must equal the folder's name {folder_name!r}"))
    return problems


def _name_fault(name: str) -> str:
    if name != name.lower():
        return "must be lowercase"
    if name.startswith("-") or name.endswith("-"):
        return "must not start or end with a hyphen"
    if "--" in name:
        return "must not contain consecutive hyphens"
    bad = sorted({c for c in name if not (c.isascii() and (c.isalnum() or c == "-"))})
    return f"may hold only a-z, 0-9 and hyphens, not {' '.join(repr(c) for c in bad)}"


def _check_text(value: Any, name: str, limit: int | None, *, required: bool) -> list[Problem]:
    if value is None:
        return [Problem(name, "is required")] if required else []
    if not isinstance(value, str):
        return [Problem(name, f"must be text, got {type(value).__name__}")]
    if not value.strip():
        return [Problem(name, "must not be empty")]
    if limit is not None and len(value) > limit:
        return [Problem(name, f"must be at most {limit} characters, got {len(value)}")]
    return []


def _check_metadata(metadata: Any) -> list[Problem]:
    if not isinstance(metadata, dict):
        return [Problem("metadata", "must be a map of string keys to string values")]
    problems = []
    for key, value in metadata.items():
        if not isinstance(key, str):
            problems.append(Problem("metadata", f"key {key!r} must be a string"))
        elif not isinstance(value, str):
            problems.append(
                Problem(
                    f"metadata.{key}",
                    f'must be a string, got {type(value).__name__} (quote it: {key}: "{value}")',
                )
            )
    return problems


def parse(text: str, folder_name: str | None = None) -> SkillDocument:
    """The document in `text`; SkillFormatError with every error if it breaks the rules
    (warnings do not stop it)."""
    front, body = split_front_matter(text)
    errors = [problem for problem in check(front, body, folder_name) if problem.severity == "error"]
    if errors:
        raise SkillFormatError(errors)
    return SkillDocument(
        name=front["name"],
        description=front["description"],
        body=body,
        license=front.get("license"),
        compatibility=front.get("compatibility"),
        metadata=dict(front.get("metadata") or {}),
        allowed_tools=front.get("allowed-tools"),
    )


def document_problems(document: SkillDocument, folder_name: str | None = None) -> list[Problem]:
    """The problems of a document built in code (before it is written)."""
    front, body = split_front_matter(document.render())
    return check(front, body, folder_name)
