"""Markdown to Telegram text + entities, and splitting at 4096 UTF-16 code units."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.telegram.format import MESSAGE_LIMIT, Entity, render, split, utf16_len


def marked(text: str, entity: Entity) -> str:
    """The text an entity (UTF-16 offsets) covers."""
    units = text.encode("utf-16-le")
    return units[2 * entity.offset : 2 * (entity.offset + entity.length)].decode("utf-16-le")


def test_markdown_becomes_plain_text_with_entities() -> None:
    text, entities = render(
        "# Result\nIt **worked**, see `out.txt` and [the docs](https://example.com/d).\n"
        "- *first*\n- ~~second~~\n```python\nprint('**not bold**')\n```\ndone"
    )
    assert text == (
        "Result\nIt worked, see out.txt and the docs.\n• first\n• second\nprint('**not bold**')\ndone"
    )
    found = {(e.type, text[e.offset : e.offset + e.length], e.url, e.language) for e in entities}
    assert found == {
        ("bold", "Result", None, None),
        ("bold", "worked", None, None),
        ("code", "out.txt", None, None),
        ("text_link", "the docs", "https://example.com/d", None),
        ("italic", "first", None, None),
        ("strikethrough", "second", None, None),
        ("pre", "print('**not bold**')", None, "python"),
    }


def test_text_that_only_looks_like_markup_stays_as_written() -> None:
    source = "snake_case_name, 2 * 3 * 4, a_b, x*y, <b>&amp; [not a link](ftp://x) _ *"
    text, entities = render(source)
    assert (text, entities) == (source, [])


def test_short_text_is_one_piece_with_utf16_offsets() -> None:
    text, entities = render("😀 **bold** 👍")
    [piece] = split(text, entities)
    assert piece.text == "😀 bold 👍"
    assert [marked(piece.text, e) for e in piece.entities] == ["bold"]
    assert piece.entities[0].offset == 3  # the emoji is two UTF-16 code units


def test_long_text_is_cut_at_paragraphs_then_lines() -> None:
    paragraph = ("word " * 300).strip()  # 1499 characters: two fit in a message, three do not
    pieces = split("\n\n".join([paragraph] * 5))
    two = f"{paragraph}\n\n{paragraph}"
    assert [p.text for p in pieces] == [two, two, paragraph]
    lines = "\n".join(f"line {n}" for n in range(2000))
    assert all(p.text.startswith("line ") for p in split(lines))


def test_a_code_block_across_pieces_stays_code_in_each() -> None:
    text, entities = render("```\n" + "x = 1\n" * 1500 + "```")
    pieces = split(text, entities)
    assert len(pieces) == 3
    for piece in pieces:
        assert [(e.type, e.offset, e.length) for e in piece.entities] == [("pre", 0, utf16_len(piece.text))]


def test_emoji_count_twice_against_the_limit() -> None:
    pieces = split("😀" * 3000)
    assert [utf16_len(p.text) for p in pieces] == [MESSAGE_LIMIT, 6000 - MESSAGE_LIMIT]


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab *_`#-\n\n😀[]()"), max_size=3000), st.integers(8, 600))
def test_pieces_fit_keep_every_character_and_entities_stay_inside(source: str, limit: int) -> None:
    text, entities = render(source)
    pieces = split(text, entities, limit)
    assert all(0 < utf16_len(p.text) <= limit for p in pieces)
    assert "".join(p.text for p in pieces).replace(" ", "").replace("\n", "") == (
        text.replace(" ", "").replace("\n", "")
    )
    for piece in pieces:
        for entity in piece.entities:
            assert entity.length > 0 and entity.offset + entity.length <= utf16_len(piece.text)
