"""Text between temper and Slack: Markdown answers to Slack's mrkdwn, long answers split into
readable messages, Slack's markup in what people write back to plain text, and the Block Kit of
approval prompts.

mrkdwn is not Markdown: `*bold*`, `_italic_`, `~strike~`, links as `<url|label>`, no headings, and
`&`, `<`, `>` must be escaped as HTML entities everywhere (Slack reads `<...>` as a control
sequence, even inside code). Conversions leave code spans and fenced blocks alone apart from that
escaping.

Splitting: Slack accepts about 40,000 characters per message but a wall of text reads badly; parts
are at most `MESSAGE_CHARS` long, cut at a paragraph break, else a line break, else a space, and a
code block cut in two is closed and reopened so both halves render as code.
"""

from __future__ import annotations

import re
from typing import Any

MESSAGE_CHARS = 3500
SECTION_CHARS = 3000  # Slack's limit on a Block Kit section's text
FENCE = "```"

APPROVAL_ACTION_PREFIX = "temper_approval_"
APPROVAL_CHOICES = (("yes", "Run it", "primary"), ("no", "Don't", "danger"), ("always", "Always allow", None))


# -- outbound: Markdown -> mrkdwn ------------------------------------------------------------

_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]+`", re.DOTALL)
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_ITALIC = re.compile(r"(?<![*\w])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![*\w])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_BULLET = re.compile(r"^(\s*)[*-]\s+", re.MULTILINE)
_FENCE_LANGUAGE = re.compile(r"^```[\w+#.-]+\n")


def escape(text: str) -> str:
    """Slack's three entities; everything else is sent as is."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_mrkdwn(markdown: str) -> str:
    """The Markdown a model writes, as Slack mrkdwn: bold, italics, strike, links, headings and
    bullets converted outside code; code only escaped (and a fence's language tag dropped, which
    Slack would show as a first line)."""
    out: list[str] = []
    position = 0
    for code in _CODE.finditer(markdown):
        out.append(_prose_to_mrkdwn(markdown[position : code.start()]))
        out.append(escape(_FENCE_LANGUAGE.sub(FENCE + "\n", code.group(0))))
        position = code.end()
    out.append(_prose_to_mrkdwn(markdown[position:]))
    return "".join(out)


def _prose_to_mrkdwn(text: str) -> str:
    links: list[str] = []

    def keep_link(match: re.Match[str]) -> str:  # links are set aside so escaping keeps `<url|label>`
        links.append(f"<{escape(match.group(2))}|{escape(match.group(1))}>")
        return f"\x00{len(links) - 1}\x00"

    text = _LINK.sub(keep_link, text)
    text = escape(text)
    text = _ITALIC.sub(r"_\1_", text)  # before bold and headings, which become *single stars*
    text = _BOLD.sub(lambda m: f"*{m.group(1) or m.group(2)}*", text)
    text = _STRIKE.sub(r"~\1~", text)
    text = _HEADING.sub(lambda m: f"*{m.group(1)}*", text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
    return re.sub(r"\x00(\d+)\x00", lambda m: links[int(m.group(1))], text)


# -- outbound: splitting ---------------------------------------------------------------------


def split_message(text: str, limit: int = MESSAGE_CHARS) -> list[str]:
    """`text` in parts of at most `limit` characters (see the module docstring); never empty."""
    parts: list[str] = []
    rest = text.strip("\n")
    room = limit - len(FENCE) - 1  # space to close a code block cut in two
    while len(rest) > limit:
        cut, skip = _cut_point(rest, room)
        part, rest = rest[:cut].rstrip(), rest[cut + skip :]
        if part.count(FENCE) % 2 == 1:
            part += "\n" + FENCE
            rest = FENCE + "\n" + rest
        parts.append(part)
    parts.append(rest.rstrip())
    return [part for part in parts if part.strip()] or [text or " "]


def _cut_point(text: str, room: int) -> tuple[int, int]:
    """Where to end this part, and how many separator characters to drop after it."""
    window = text[: room + 1]
    for separator, floor in (("\n\n", room // 2), ("\n", room // 3), (" ", room // 3)):
        at = window.rfind(separator)
        if at > floor:
            return at, len(separator)
    amp = window.rfind("&", room - 6, room)  # never cut an entity like &amp; in half
    return (amp if amp > 0 and ";" not in window[amp:room] else room), 0


# -- inbound: Slack markup -> plain text -----------------------------------------------------

_CONTROL = re.compile(r"<([^<>|]+)(?:\|([^<>]*))?>")


def from_slack(text: str, bot_user_id: str | None) -> str:
    """What a person wrote, as plain text: the bot's own mention removed, other mentions, channel
    names and links in their readable form, entities unescaped."""

    def readable(match: re.Match[str]) -> str:
        target, label = match.group(1), match.group(2)
        if target.startswith("@"):
            if target[1:] == bot_user_id:
                return ""
            return f"@{label or target[1:]}"
        if target.startswith("#"):
            return f"#{label or target[1:]}"
        if target.startswith("!"):
            special = target[1:].split("^")[0]
            return label or f"@{special}"
        if target.startswith("mailto:"):
            return label or target.removeprefix("mailto:")
        return target if not label or label == target else f"{label} ({target})"

    plain = _CONTROL.sub(readable, text)
    plain = plain.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return re.sub(r"[ \t]{2,}", " ", plain).strip()


# -- Block Kit: approvals --------------------------------------------------------------------


def approval_blocks(approval_id: str, command: str, reason: str) -> list[dict[str, Any]]:
    """A section showing the command and why it needs approval, and yes / no / always buttons
    whose `value` is the approval id."""
    return [
        _section(
            f"*temper wants to run a command that needs your approval*\n{_code_block(command)}\n_{escape(reason)}_"
        ),
        {
            "type": "actions",
            "block_id": f"temper_approval:{approval_id}"[:255],
            "elements": [
                _button(approval_id, choice, label, style) for choice, label, style in APPROVAL_CHOICES
            ],
        },
    ]


def approval_outcome_blocks(command: str, choice: str, user_id: str) -> list[dict[str, Any]]:
    """What an approval prompt becomes once answered: the command and who chose what, no buttons."""
    verdict = {"yes": "approved", "no": "refused", "always": "approved (always)"}.get(choice, choice)
    return [_section(f"{_code_block(command)}\n{verdict} by <@{user_id}>")]


def approval_fallback_text(command: str) -> str:
    """The notification text of an approval prompt (shown where blocks are not)."""
    return f"Approval needed: {escape(command[:200])}"


def _button(approval_id: str, choice: str, label: str, style: str | None) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "action_id": APPROVAL_ACTION_PREFIX + choice,
        "text": {"type": "plain_text", "text": label},
        "value": approval_id,
    }
    if style:
        button["style"] = style
    return button


def _code_block(command: str) -> str:
    room = SECTION_CHARS - 400  # leave space for the heading and the reason
    shown = command if len(command) <= room else command[:room] + "\n..."
    return f"{FENCE}\n{escape(shown)}\n{FENCE}"


def _section(mrkdwn: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": mrkdwn[:SECTION_CHARS]}}
