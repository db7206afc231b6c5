"""The agent's markdown as Telegram renders it, cut into messages Telegram accepts.

Telegram formats a message either by markup (`parse_mode` MarkdownV2 or HTML) or by entities
(type, offset, length). Markup must be escaped perfectly, or the whole message is refused with
"can't parse entities"; entities cannot be broken by the text they describe. So replies go out
as plain text plus entities, computed here from the markdown models write: fenced code blocks,
`code`, **bold** / __bold__, *italic* / _italic_, ~~strike~~, [links](https://...), # headings
(bold) and `-` / `*` list bullets. Anything else stays exactly as written.

Splitting: a message holds at most 4096 UTF-16 code units (emoji count twice). Each piece ends at
the last blank line before the limit, else the last line break, else the last space, else at the
limit itself; whitespace at the ends of a piece is dropped (Telegram trims it anyway); entities
are clipped to their piece. Entity offsets are counted in UTF-16 code units, as Telegram counts.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from itertools import accumulate

__all__ = ["MESSAGE_LIMIT", "Entity", "Piece", "render", "split", "utf16_len"]

MESSAGE_LIMIT = 4096

FENCE = re.compile(r"^```[ \t]*([\w+#.-]*)[ \t]*\n(.*?)\n?^```[ \t]*$", re.MULTILINE | re.DOTALL)
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$")
BULLET = re.compile(r"^([ \t]*)[-*+][ \t]+(?=\S)")
# One alternative per kind; the first that matches at a position wins.
INLINE = re.compile(
    r"`(?P<code>[^`\n]+)`"
    r"|\[(?P<label>[^\]\n]+)\]\((?P<url>https?://[^\s)]+)\)"
    r"|\*\*(?P<bold>\S(?:.*?\S)?)\*\*"
    r"|(?<!\w)__(?P<bold2>\S(?:.*?\S)?)__(?!\w)"
    r"|~~(?P<strike>\S(?:.*?\S)?)~~"
    r"|(?<![\w*])\*(?P<italic>[^\s*](?:[^*\n]*?[^\s*])?)\*(?![\w*])"
    r"|(?<![\w_])_(?P<italic2>[^\s_](?:[^_\n]*?[^\s_])?)_(?![\w_])"
)
STYLES = {
    "bold": "bold",
    "bold2": "bold",
    "strike": "strikethrough",
    "italic": "italic",
    "italic2": "italic",
}


@dataclass(frozen=True)
class Entity:
    """A Telegram message entity. Offsets count code points inside `render`, UTF-16 code units
    in the pieces `split` returns."""

    type: str  # "bold", "italic", "strikethrough", "code", "pre", "text_link"
    offset: int
    length: int
    url: str | None = None
    language: str | None = None


@dataclass(frozen=True)
class Piece:
    """One message's worth: plain text and the entities that format it."""

    text: str
    entities: tuple[Entity, ...] = ()


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def render(markdown: str) -> tuple[str, list[Entity]]:
    """Plain text and its entities (offsets in code points) for `markdown`."""
    out = _Rendered()
    at = 0
    for fence in FENCE.finditer(markdown):
        _prose(markdown[at : fence.start()], out)
        start, code = out.length, fence.group(2)
        out.add(code)
        out.mark("pre", start, language=fence.group(1) or None)
        at = fence.end()
    _prose(markdown[at:], out)
    return "".join(out.parts), sorted(out.entities, key=lambda entity: entity.offset)


class _Rendered:
    """Text built up in parts, with its length kept (not re-summed) and its entities."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.entities: list[Entity] = []
        self.length = 0

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.length += len(text)

    def mark(self, kind: str, start: int, url: str | None = None, language: str | None = None) -> None:
        """Format everything added since `start`."""
        if self.length > start:
            self.entities.append(Entity(kind, start, self.length - start, url, language))


def _prose(text: str, out: _Rendered) -> None:
    for number, line in enumerate(text.split("\n")):
        if number:
            out.add("\n")
        if heading := HEADING.match(line):
            start = out.length
            _inline(heading.group(1), out)
            out.mark("bold", start)
            continue
        if bullet := BULLET.match(line):
            line = f"{bullet.group(1)}• {line[bullet.end() :]}"
        _inline(line, out)


def _inline(text: str, out: _Rendered) -> None:
    at = 0
    for match in INLINE.finditer(text):
        out.add(text[at : match.start()])
        start, kind = out.length, match.lastgroup
        if kind == "code":
            out.add(match.group("code"))
            out.mark("code", start)
        elif kind == "url":  # the label group closes before the url group
            _inline(match.group("label"), out)
            out.mark("text_link", start, url=match.group("url"))
        else:
            assert kind is not None
            _inline(match.group(kind), out)
            out.mark(STYLES[kind], start)
        at = match.end()
    out.add(text[at:])


def split(text: str, entities: list[Entity] | None = None, limit: int = MESSAGE_LIMIT) -> list[Piece]:
    """Cut rendered text (entity offsets in code points) into pieces of at most `limit` UTF-16
    code units each; empty pieces are dropped. Entity offsets in the pieces are UTF-16."""
    units = [0, *accumulate(1 if ord(char) < 0x10000 else 2 for char in text)]  # UTF-16 prefix
    waiting = sorted(entities or [], key=lambda entity: entity.offset, reverse=True)
    open_: list[Entity] = []  # begun before the current piece's end, maybe not yet ended
    pieces = []
    start = 0
    while start < len(text):
        end = bisect.bisect_right(units, units[start] + limit) - 1  # the most that fits
        if end < len(text):
            end = _boundary(text, start, end)
        while waiting and waiting[-1].offset < end:
            open_.append(waiting.pop())
        piece = _piece(text, units, start, end, open_)
        if piece.text:
            pieces.append(piece)
        open_ = [entity for entity in open_ if entity.offset + entity.length > end]
        start = end
    return pieces


def _boundary(text: str, start: int, end: int) -> int:
    """Where to cut text[start:end]: after a blank line, a line or a word, when one falls in the
    second half of the window (else pieces get tiny), otherwise at `end`."""
    half = start + (end - start) // 2
    for separator in ("\n\n", "\n", " "):
        cut = text.rfind(separator, half, end)
        if cut > start:
            return cut + len(separator)
    return end


def _piece(text: str, units: list[int], start: int, end: int, entities: list[Entity]) -> Piece:
    """text[start:end] stripped, with the entities that overlap it; `units[i]` is the UTF-16
    length of text[:i]."""
    raw = text[start:end]
    first = start + len(raw) - len(raw.lstrip())
    last = first + len(raw.strip())
    clipped = []
    for entity in entities:
        low, high = max(entity.offset, first), min(entity.offset + entity.length, last)
        if low < high:
            offset, length = units[low] - units[first], units[high] - units[low]
            clipped.append(Entity(entity.type, offset, length, entity.url, entity.language))
    return Piece(text[first:last], tuple(clipped))
