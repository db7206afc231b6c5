"""The library on disk: writes validated and scanned, every version kept, archive and restore."""

from __future__ import annotations

from pathlib import Path

import pytest

from skills import (
    Edit,
    PatchError,
    SkillBlocked,
    SkillDocument,
    SkillError,
    SkillExists,
    SkillFormatError,
    SkillLibrary,
    SkillNotFound,
)

DOC = SkillDocument(
    "git-undo-commit",
    "Undo the last git commit and keep its changes staged. Use when a commit was made too early.",
    "\n# Undo a commit\n\n```\ngit reset --soft HEAD~1\n```\n",
)


@pytest.fixture
def library(tmp_path: Path) -> SkillLibrary:
    return SkillLibrary(tmp_path / "skills")


def test_create_writes_the_folder_and_version_one(library: SkillLibrary) -> None:
    written = library.create(DOC)
    assert written.version == 1
    text = (library.root / "git-undo-commit" / "SKILL.md").read_text()
    assert "version: '1'" in text and text.endswith(DOC.body)
    assert library.load("git-undo-commit").body == DOC.body
    assert [v.note for v in library.history("git-undo-commit")] == ["created"]
    with pytest.raises(SkillExists, match="patch it, or pick another name"):
        library.create(DOC)


def test_patch_is_a_minimal_edit_and_every_version_is_kept(library: SkillLibrary) -> None:
    library.create(DOC)
    library.patch("git-undo-commit", [Edit("HEAD~1", "HEAD~1  # keeps the changes staged")])
    assert "keeps the changes staged" in library.text("git-undo-commit")
    assert "HEAD~1\n" in library.version_text("git-undo-commit", 1)
    with pytest.raises(PatchError, match="edit 1: its old text is not in SKILL.md"):
        library.patch("git-undo-commit", [Edit("no such text", "x")])
    with pytest.raises(PatchError, match="occurs 2 times"):
        library.patch("git-undo-commit", [Edit("Undo", "x")])
    library.restore_version("git-undo-commit", 1)
    assert "keeps the changes staged" not in library.text("git-undo-commit")
    assert [v.number for v in library.history("git-undo-commit")] == [1, 2, 3]
    assert library.load("git-undo-commit").version == 3


def test_a_hand_edit_becomes_a_version_of_its_own(library: SkillLibrary) -> None:
    library.create(DOC)
    path = library.root / "git-undo-commit" / "SKILL.md"
    path.write_text(path.read_text().replace("too early", "too soon"))
    library.write_file("git-undo-commit", "scripts/undo.sh", "git reset --soft HEAD~1\n")
    assert [(v.number, v.note) for v in library.history("git-undo-commit")] == [
        (1, "created"),
        (2, "edited on disk"),
        (3, "wrote scripts/undo.sh"),
    ]
    assert "too soon" in library.version_text("git-undo-commit", 2)
    assert library.file_names("git-undo-commit") == ["scripts/undo.sh"]


def test_refused_writes_leave_the_folder_as_it_was(library: SkillLibrary) -> None:
    library.create(DOC)
    before = library.text("git-undo-commit")
    with pytest.raises(SkillBlocked, match="scripts/leak.sh:1: secrets"):
        library.write_file("git-undo-commit", "scripts/leak.sh", "cat /etc/temper/secrets.toml\n")
    with pytest.raises(SkillFormatError, match="description: must be at most 1024"):
        library.update(DOC.__class__(DOC.name, "d" * 2000, DOC.body), "too long")
    with pytest.raises(SkillError, match="not a skill file path"):
        library.write_file("git-undo-commit", "../../etc/passwd", "x")
    with pytest.raises(SkillError, match="not a skill file path"):
        library.write_file("git-undo-commit", "SKILL.md", "x")
    assert library.text("git-undo-commit") == before
    assert library.file_names("git-undo-commit") == []
    assert len(library.history("git-undo-commit")) == 1


def test_archive_and_restore(library: SkillLibrary) -> None:
    library.create(DOC)
    library.archive("git-undo-commit")
    assert library.names() == [] and library.archived() == ["git-undo-commit"]
    with pytest.raises(SkillNotFound, match="archived: restore it first"):
        library.load("git-undo-commit")
    with pytest.raises(SkillExists, match="an archived skill is named"):
        library.create(DOC)
    library.restore("git-undo-commit")
    assert library.names() == ["git-undo-commit"]
    library.remove("git-undo-commit")
    assert library.names() == [] and library.archived() == [] and library.history("git-undo-commit") == []


def test_names_never_become_paths_outside_the_library(library: SkillLibrary) -> None:
    for name in ("../x", ".history", "a/b", ""):
        with pytest.raises(SkillNotFound, match="is not a skill name"):
            library.load(name)
