"""Importing a tree of real-format skill folders: agentskills.io, Claude, the peer's."""

from __future__ import annotations

from pathlib import Path

from skills import SkillLibrary, import_path
from tests.skills.folders import BAD, GOOD, write_tree


def test_a_tree_imports_the_good_and_refuses_the_bad_with_reasons(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "incoming")
    library = SkillLibrary(tmp_path / "skills")
    outcomes = {outcome.name or outcome.source.name: outcome for outcome in import_path(library, tree)}
    assert sorted(name for name, o in outcomes.items() if o.imported) == sorted(GOOD)
    assert sorted(name for name, o in outcomes.items() if not o.imported) == sorted(BAD)
    assert "model-instructions" in outcomes["sneaky"].reason and "SKILL.md:3" in outcomes["sneaky"].reason
    assert "hidden-unicode" in outcomes["hidden"].reason
    assert (
        outcomes["no-description"].reason
        == "description: is required: what the skill does and when to use it"
    )
    assert "scripts/backup.sh:2: secrets" in outcomes["exfil"].reason
    assert sorted(library.names()) == sorted(GOOD)


def test_extra_keys_move_under_metadata_and_are_reported(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "incoming")
    library = SkillLibrary(tmp_path / "skills")
    [outcome] = import_path(library, tree / "hermes" / "Docker Cleanup")
    assert outcome.imported and outcome.name == "docker-cleanup"
    assert "moved under metadata: version, author, tags, platforms" in outcome.notes
    assert "name 'Docker Cleanup' -> 'docker-cleanup'" in outcome.notes
    document = library.load("docker-cleanup")
    assert document.metadata["original-version"] == "1.2.0"
    assert document.metadata["tags"] == "docker, disk"
    assert document.metadata["hermes.related_skills"] == "disk-usage"
    assert document.metadata["trust"] == "untrusted" and document.metadata["created-by"] == "import"
    assert not document.trusted


def test_files_come_along_and_lists_of_tools_become_a_string(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "incoming")
    library = SkillLibrary(tmp_path / "skills")
    import_path(library, tree / "anthropic")
    import_path(library, tree / "claude" / "commit-messages" / "SKILL.md")
    assert library.file_names("pdf-forms") == ["LICENSE.txt", "forms.md", "scripts/fields.py"]
    assert library.read_file("pdf-forms", "forms.md").startswith("# Field types")
    assert library.load("pdf-forms").license == "Complete terms in LICENSE.txt"
    assert library.load("commit-messages").allowed_tools == "Bash Read"


def test_a_second_import_of_the_same_name_is_refused(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "incoming")
    library = SkillLibrary(tmp_path / "skills")
    import_path(library, tree / "claude")
    [again] = import_path(library, tree / "claude")
    assert not again.imported and "exists" in again.reason


def test_a_file_claiming_trust_is_still_untrusted(tmp_path: Path) -> None:
    folder = tmp_path / "liar"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: liar\ndescription: Lists files. Use to list.\nmetadata:\n  trust: trusted\n---\nls\n"
    )
    library = SkillLibrary(tmp_path / "skills")
    [outcome] = import_path(library, folder)
    assert outcome.imported
    document = library.load("liar")
    assert document.metadata["trust"] == "untrusted" and document.metadata["original-trust"] == "trusted"
