"""The planner's skill tools: `skills_search`, `skill_view` and `skill_manage`, bound to one
`SkillCatalog` (runtime/skill_catalog.py) by `skill_tools(catalog)`.

Every schema token is paid on every call, so the descriptions are one short line each and
skill_manage is one flat set of arguments (the action says which apply) rather than a union.

Invariants: `skill_view` records the view against the turn's episode (that is what ties a
skill to outcomes); every write goes through the catalog, so it is validated, scanned, kept as
a version and re-indexed; a refusal comes back to the model as "Error: ..." saying why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from runtime.tools.context import ToolContext
from runtime.tools.result import ToolError
from runtime.tools.signature import Tool, tool
from skills import Edit, SkillDocument, SkillError

if TYPE_CHECKING:
    from runtime.skill_catalog import SkillCatalog

Action = Literal["create", "patch", "write_file", "remove_file", "archive"]


def skill_tools(catalog: SkillCatalog) -> tuple[Tool, ...]:
    """The three skill tools, acting on `catalog`."""

    def skills_search(query: str, limit: Annotated[int, Field(ge=1, le=20)] = 5) -> str:
        """Find saved skills (procedures) for a task."""
        matches = catalog.search(query, limit=limit)
        if not matches:
            return f"No skill matches {query!r}."
        return "\n".join(f"{match.name}: {match.description}" for match in matches)

    def skill_view(context: ToolContext, name: str, file: str | None = None) -> str:
        """Load a skill's instructions, or one of its files."""
        try:
            return catalog.view(name, file, episode_id=context.episode_id)
        except SkillError as error:
            raise ToolError(str(error)) from None

    def skill_manage(
        action: Action,
        name: str,
        description: str | None = None,
        body: str | None = None,
        old: str | None = None,
        new: str | None = None,
        file: str | None = None,
        content: str | None = None,
    ) -> str:
        """Change the skill library: create(description, body), patch(old, new), write_file(file, content), remove_file(file), archive."""
        from runtime.skill_catalog import refusal

        try:
            if action == "create":
                if not description or body is None:
                    raise ToolError("create needs description and body")
                written = catalog.create(SkillDocument(name=name, description=description, body=body))
            elif action == "patch":
                if old is None or new is None:
                    raise ToolError("patch needs old (exact text now in SKILL.md) and new")
                written = catalog.patch(name, [Edit(old, new)], note="patched by the planner")
            elif action in ("write_file", "remove_file"):
                if file is None or (action == "write_file" and content is None):
                    raise ToolError(
                        f"{action} needs file" + (" and content" if action == "write_file" else "")
                    )
                written = (
                    catalog.write_file(name, file, content or "")
                    if action == "write_file"
                    else catalog.remove_file(name, file)
                )
            else:
                catalog.archive(name)
                return f"Archived {name}."
        except SkillError as error:
            raise ToolError(refusal(error)) from None
        warnings = "".join(f"\nwarning: {finding}" for finding in written.warnings)
        return f"{name}: version {written.version} saved.{warnings}"

    return tuple(tool(function) for function in (skills_search, skill_view, skill_manage))
