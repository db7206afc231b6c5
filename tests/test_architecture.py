"""The import direction of docs/architecture.md, checked on the source: arrows only point down.

    connectors -> runtime, learner, memory, skills     (the composition root sees all)
    learner    -> runtime, memory, skills
    runtime    -> memory, skills
    memory, skills -> none of the others

Every import counts, the ones inside functions too (they are how heavy modules load late), and
so do the ones under ``if TYPE_CHECKING``: a type named across the line is a dependency too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("connectors", "runtime", "learner", "memory", "skills")
ALLOWED = {
    "connectors": {"runtime", "learner", "memory", "skills"},
    "learner": {"runtime", "memory", "skills"},
    "runtime": {"memory", "skills"},
    "memory": set(),
    "skills": set(),
}


def imported_packages(path: Path) -> set[tuple[str, int]]:
    """(our package, line) for every absolute import of one of our packages in ``path``."""
    found: set[tuple[str, int]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found |= {(name.split(".")[0], node.lineno) for name in names if name.split(".")[0] in PACKAGES}
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_imports_only_the_packages_below_it(package: str) -> None:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no source files under {package}/"
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {target}"
        for path in files
        for target, line in sorted(imported_packages(path))
        if target != package and target not in ALLOWED[package]
    ]
    assert not wrong, "imports against the direction of docs/architecture.md:\n" + "\n".join(wrong)


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    source = tmp_path / "late.py"
    source.write_text("def f():\n    from connectors.config import Config\n    import learner.cycle\n")
    assert imported_packages(source) == {("connectors", 2), ("learner", 3)}
