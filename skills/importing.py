"""Importing skill folders as they come: agentskills.io, Claude, and the peer's (Hermes-style).

`import_path(library, path)` takes one skill folder (a folder with SKILL.md) or a tree holding
many, and for each returns an `ImportOutcome`: imported, or refused with the reason.

What is normalised, and reported as notes:
- top-level keys the specification does not have (`version`, `author`, `tags`, `platforms`,
  ...) move under `metadata`; nested maps flatten to dotted keys (`hermes.tags`), lists join
  with ", ", numbers and booleans become strings (metadata is a string map);
- `allowed-tools` given as a list becomes the space-separated string the specification asks for;
- a missing or malformed `name` is taken from the folder (lowercased, other characters turned
  to single hyphens); the skill is stored under its name, whatever its folder was called.

What is refused: no front matter, YAML that does not parse, no description, a name already in
the library (in use or archived), a file over the size limit, and whatever the security scan
blocks. Every imported skill is marked `trust: untrusted` and `created-by: import` (whatever the
file claimed) until the operator approves it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skills.errors import SkillBlocked, SkillError, SkillFormatError
from skills.format import (
    MAX_NAME,
    NAME_PATTERN,
    SKILL_FILE,
    SPEC_KEYS,
    Problem,
    SkillDocument,
    parse,
    split_front_matter,
)
from skills.library import SkillLibrary, read_folder

TEMPER_KEYS = ("trust", "created-by", "source-episode", "version", "pinned")


@dataclass
class ImportOutcome:
    source: Path
    name: str | None
    imported: bool
    reason: str = ""  # why it was refused
    notes: list[str] = field(default_factory=list)  # what was changed to fit the format
    warnings: list[str] = field(default_factory=list)  # the scan's warn findings


def find_skill_folders(path: Path) -> list[Path]:
    """`path` itself if it holds SKILL.md, else every folder below it that does (dot folders
    skipped; a skill's own subfolders are not searched)."""
    if (path / SKILL_FILE).is_file():
        return [path]
    found: list[Path] = []
    for skill_md in sorted(path.rglob(SKILL_FILE)):
        folder = skill_md.parent
        relative = folder.relative_to(path).parts
        if any(part.startswith(".") for part in relative):
            continue
        if any(folder.is_relative_to(outer) for outer in found):
            continue
        found.append(folder)
    return found


def import_path(library: SkillLibrary, path: Path) -> list[ImportOutcome]:
    if not path.exists():
        raise SkillError(f"no such file or folder: {path}")
    if path.is_file():
        path = path.parent if path.name == SKILL_FILE else path
    if not path.is_dir():
        raise SkillError(f"{path} is not a folder: give a skill folder (with SKILL.md) or a folder of them")
    return [import_folder(library, folder) for folder in find_skill_folders(path)]


def import_folder(library: SkillLibrary, folder: Path) -> ImportOutcome:
    outcome = ImportOutcome(folder, None, False)
    try:
        text = (folder / SKILL_FILE).read_text(encoding="utf-8")
        document, outcome.notes = normalise(text, folder.name)
        outcome.name = document.name
        document = document.with_metadata(trust="untrusted", created_by="import", source=str(folder))
        files = {path: data for path, data in read_folder(folder).items() if path != SKILL_FILE}
        written = library.create(document, files, note=f"imported from {folder}")
    except SkillBlocked as error:
        outcome.reason = "; ".join(str(finding) for finding in error.findings)
        return outcome
    except (SkillError, UnicodeDecodeError, OSError) as error:
        outcome.reason = str(error)
        return outcome
    outcome.imported = True
    outcome.warnings = [str(finding) for finding in written.warnings]
    return outcome


def normalise(text: str, folder_name: str) -> tuple[SkillDocument, list[str]]:
    """The document `text` holds, made to fit the specification, and what was changed."""
    front, body = split_front_matter(text)
    notes: list[str] = []
    metadata: dict[str, str] = {}
    given = front.get("metadata")
    if isinstance(given, dict):
        metadata.update(_flatten(given))
        if any(not isinstance(value, str) for value in given.values()):
            notes.append("metadata values turned into strings")
    elif given is not None:
        metadata["metadata"] = _text(given)
        notes.append("metadata was not a map: kept as metadata.metadata")
    extra = [key for key in front if key not in SPEC_KEYS]
    for key in extra:
        metadata.update(_flatten({str(key): front[key]}))
    if extra:
        notes.append("moved under metadata: " + ", ".join(str(key) for key in extra))
    for key in TEMPER_KEYS:  # temper decides these, not the file
        if key in metadata and key != "version":
            metadata[f"original-{key}"] = metadata.pop(key)
    if "version" in metadata:
        metadata["original-version"] = metadata.pop("version")
    name = front.get("name")
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or len(name) > MAX_NAME:
        fixed = slug(name if isinstance(name, str) and name.strip() else folder_name)
        notes.append(
            f"name {name!r} -> {fixed!r}" if name is not None else f"name taken from the folder: {fixed!r}"
        )
        name = fixed
    tools = front.get("allowed-tools")
    if isinstance(tools, list):
        tools = " ".join(str(tool) for tool in tools)
        notes.append("allowed-tools list joined into one string")
    description = front.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillFormatError(
            [Problem("description", "is required: what the skill does and when to use it")]
        )
    candidate = SkillDocument(
        name=name,
        description=description,
        body=body,
        license=_optional_text(front.get("license")),
        compatibility=_optional_text(front.get("compatibility")),
        metadata=metadata,
        allowed_tools=tools if isinstance(tools, str) else None,
    )
    return parse(candidate.render(), folder_name=name), notes


def slug(text: str) -> str:
    """A valid skill name made from `text` ("My PDF Tool" -> "my-pdf-tool")."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(words)[:MAX_NAME].strip("-") or "imported-skill"


def _flatten(values: dict[Any, Any], prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = _text(value)
    return flat


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_text(item) for item in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(value)
