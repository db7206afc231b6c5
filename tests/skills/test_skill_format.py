"""SKILL.md against the agentskills.io rules: what is accepted, and the message for each fault."""

from __future__ import annotations

import pytest

from skills import SkillDocument, SkillFormatError, check, parse, split_front_matter


def problems(text: str, folder: str | None = None) -> list[str]:
    front, body = split_front_matter(text)
    return [f"{p.severity}: {p}" for p in check(front, body, folder)]


VALID = """---
name: pdf-processing
description: Extract text and tables from PDF files. Use when working with PDFs.
license: Apache-2.0
compatibility: Needs python3 and pypdf
allowed-tools: Bash Read
metadata:
  author: example-org
  version: "1.0"
---

# PDF processing
Steps.
"""


def test_a_valid_skill_parses_and_round_trips() -> None:
    document = parse(VALID, folder_name="pdf-processing")
    assert document.name == "pdf-processing"
    assert document.allowed_tools == "Bash Read"
    assert document.metadata == {"author": "example-org", "version": "1.0"}
    assert document.body == "\n# PDF processing\nSteps.\n"
    assert parse(document.render(), folder_name="pdf-processing") == document
    assert problems(VALID, "pdf-processing") == []


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("PDF-Processing", "name: 'PDF-Processing' must be lowercase"),
        ("-pdf", "name: '-pdf' must not start or end with a hyphen"),
        ("pdf--processing", "name: 'pdf--processing' must not contain consecutive hyphens"),
        ("pdf_processing", "name: 'pdf_processing' may hold only a-z, 0-9 and hyphens, not '_'"),
        ("a" * 65, "name: must be 1-64 characters, got 65"),
    ],
)
def test_bad_names_say_what_is_wrong(name: str, message: str) -> None:
    found = problems(f"---\nname: {name}\ndescription: Does a thing. Use when needed.\n---\nbody\n")
    assert f"error: {message}" in found


def test_the_name_must_equal_the_folder() -> None:
    found = problems("---\nname: one\ndescription: d\n---\n", folder="two")
    assert found == ["error: name: 'one' must equal the folder's name 'two'"]


def test_missing_and_oversized_fields() -> None:
    text = f"---\nname: x\ncompatibility: {'c' * 501}\n---\n"
    assert problems(text) == [
        "error: description: is required",
        "error: compatibility: must be at most 500 characters, got 501",
    ]
    long = "d" * 1025
    assert problems(f"---\nname: x\ndescription: {long}\n---\n") == [
        "error: description: must be at most 1024 characters, got 1025"
    ]


def test_extra_keys_and_non_string_metadata_are_errors_with_the_fix() -> None:
    text = "---\nname: x\ndescription: d\nversion: 2\ntags: [a]\nmetadata:\n  version: 1.0\n---\n"
    assert problems(text) == [
        'error: metadata.version: must be a string, got float (quote it: version: "1.0")',
        "error: version: is not a field of the specification (allowed: name, description, license,"
        " compatibility, metadata, allowed-tools); move it under metadata",
        "error: tags: is not a field of the specification (allowed: name, description, license,"
        " compatibility, metadata, allowed-tools); move it under metadata",
    ]


def test_allowed_tools_must_be_one_string() -> None:
    text = "---\nname: x\ndescription: d\nallowed-tools: [Bash, Read]\n---\n"
    assert problems(text) == [
        "error: allowed-tools: must be one string of tool names separated by spaces, like 'Bash Read'"
    ]


def test_a_long_body_is_a_warning_not_an_error() -> None:
    text = "---\nname: x\ndescription: d\n---\n" + "line\n" * 600
    assert problems(text) == [
        "warning: body: has 601 lines; keep SKILL.md under 500 and move detail to references/"
    ]
    assert parse(text).name == "x"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "# no front matter\n",
            "front matter: SKILL.md must start with a '---' line, YAML fields, then '---'",
        ),
        (
            "---\nname: x\ndescription: a: b\n---\n",
            "front matter: is not valid YAML (line 3): mapping values",
        ),
        ("---\n- a\n- b\n---\n", "front matter: must be YAML fields (key: value), not a list or text"),
    ],
)
def test_broken_front_matter(text: str, message: str) -> None:
    with pytest.raises(SkillFormatError) as raised:
        parse(text)
    assert str(raised.value).startswith(message)


def test_parse_reports_every_error_at_once() -> None:
    with pytest.raises(SkillFormatError) as raised:
        parse("---\nname: Bad Name\n---\n")
    assert [p.field for p in raised.value.problems] == ["name", "description"]


def test_temper_fields_live_under_metadata() -> None:
    document = SkillDocument("x", "Does x. Use when x.", "body\n").with_metadata(
        version="3", created_by="agent"
    )
    text = document.render()
    assert "created-by: agent" in text and "\nversion:" not in text.split("metadata:")[0]
    assert parse(text).version == 3
