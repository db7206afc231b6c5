"""The executor's action format as a regular language, so that sampling can keep to it.

    constraint = ActionConstraint(pieces, stop_ids)   # pieces[t]: token t's text
    constraint.allows(text, token)                    # does text + token stay a prefix of an action?
    constraint.allowed(text)                          # every token that does

`ACTION_PATTERN` accepts actions.py's format in its canonical layout, the one the system prompt
shows and `json.dumps` writes (one space after each colon and comma, none elsewhere):

    {"analysis": "...", "commands": [{"keystrokes": "...", "timeout": 10}, ...], "task_complete": false}

in that key order, 0-8 commands (none only with "task_complete": true), a keystrokes string with
at least one character that is not blank, and a positive timeout. It is a subset of what
`parse_action` accepts, so a whole match always parses (tests/runtime check this on generated
strings). The layout is fixed because free whitespace is a sink: a small model pushed off the
text it wanted to write (a quote inside `keystrokes`) fills the reply with blank lines until
`max_tokens` cuts it. A reply must also end in time: `shortest_ending(text)` is the shortest text
that makes a prefix whole, and `ActionConstraint.ending_tokens` spells it in the fewest tokens,
which the sampler writes once a row's budget would otherwise run out inside the action.

A completion keeps to the format when each sampled token leaves the text a prefix of some match
(`regex`'s partial matching decides that), and a stop token is allowed only once the text is a
whole match, with nothing after it. Token texts are the tokenizer's per-token decodings, which
concatenate to the decoded completion for byte-level BPE tokenizers (GPT-2, Qwen, Llama 3, the
tiny executor's); a token holding half of a multi-byte character reads as U+FFFD, a character a
JSON string may hold, so such tokens are allowed exactly inside strings.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Sequence

import regex

_ESCAPE = r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})'
_CHAR = rf'(?:[^"\\\x00-\x1f]|{_ESCAPE})'
_STRING = rf'"{_CHAR}*"'
# Blank items first (spaces, escapes such as \n), then one plain visible character: `parse_action`
# refuses keystrokes that strip to nothing. The split is unambiguous, so matching stays linear.
_KEYSTROKES = rf'"(?: |{_ESCAPE})*[^"\\\s\x00-\x1f]{_CHAR}*"'
_TIMEOUT = r"[1-9][0-9]{0,5}(?:\.[0-9]{1,3})?"
_COMMAND = rf'\{{"keystrokes": {_KEYSTROKES}, "timeout": {_TIMEOUT}\}}'
_COMMANDS = rf"{_COMMAND}(?:, {_COMMAND}){{0,7}}"
_COMPLETE = r'\], "task_complete": '
ACTION_PATTERN = (
    rf'\{{"analysis": {_STRING}, "commands": \[(?:{_COMMANDS}{_COMPLETE}(?:true|false)|{_COMPLETE}true)\}}'
)
_ACTION = regex.compile(ACTION_PATTERN)
# The shortest actions (no command, one, two): every prefix's shortest ending is a suffix of one of them, after at most
# a few characters that finish an escape (`\\"`, `\\u0000`) or give blank keystrokes a visible one.
_SHORTEST = (
    '{"analysis": "", "commands": [], "task_complete": true}',
    '{"analysis": "", "commands": [{"keystrokes": "a", "timeout": 1}], "task_complete": true}',
    '{"analysis": "", "commands": [{"keystrokes": "a", "timeout": 1}], "task_complete": false}',
    '{"analysis": "", "commands": [{"keystrokes": "a", "timeout": 1}, '
    '{"keystrokes": "a", "timeout": 1}], "task_complete": true}',
)
_LEADS = ("", "a", '"', '"a', *(("0" * k + tail) for k in range(1, 5) for tail in ("", "a")))
# Inside analysis or keystrokes: (a visible character, then) close the string and what is open.
_FREE_STRING_ENDINGS = sorted(
    (lead + action[action.index(key) - 3 :]
     for lead in ("", "a")
     for action, key in ((_SHORTEST[0], '"commands"'), (_SHORTEST[1], '"timeout"'))),
    key=len,
)  # fmt: skip
_ENDINGS = sorted(
    {lead + action[cut:] for action in _SHORTEST for cut in range(len(action) + 1) for lead in _LEADS},
    key=len,
)
_PLAIN = regex.compile(r'[^"\\\x00-\x1f]+')  # text that can go anywhere inside an open string
_FREE_TEXT_PROBE = "\u00a7"  # a character only the free strings (analysis, keystrokes) admit


def is_action_prefix(text: str) -> bool:
    """Whether `text` is a whole action or can still be extended into one."""
    return _ACTION.fullmatch(text, partial=True) is not None


def is_whole_action(text: str) -> bool:
    return _ACTION.fullmatch(text) is not None


def shortest_ending(text: str) -> str | None:
    """The shortest text that makes the action prefix `text` whole (None: `text` is no prefix).
    Only endings whose first character fits are tried, so the search stays short."""
    if not is_action_prefix(text):
        return None
    if is_action_prefix(text + _FREE_TEXT_PROBE):  # inside a free string: close it, then the rest
        for ending in _FREE_STRING_ENDINGS:
            if is_whole_action(text + ending):
                return ending
    fits: dict[str, bool] = {"": True}
    for ending in _ENDINGS:
        first = ending[:1]
        if first not in fits:
            fits[first] = is_action_prefix(text + first)
        if fits[first] and is_whole_action(text + ending):
            return ending
    return None


class ActionConstraint:
    """See the module docstring. `pieces[t]` is token t's text ("" for tokens never to sample:
    special tokens, ids past the tokenizer's vocabulary); `stop_ids` end a completion."""

    def __init__(self, pieces: Sequence[str], stop_ids: Collection[int]) -> None:
        self.pieces = list(pieces)
        self.stop_ids = frozenset(stop_ids)
        self._closing_stop = sorted(self.stop_ids)[:1]  # the stop token an ending writes (if any)
        usable = sorted(
            (piece, token) for token, piece in enumerate(self.pieces) if piece and token not in self.stop_ids
        )
        self._all = _Trie(usable)
        self._plain = [t for p, t in usable if _PLAIN.fullmatch(p)]  # tokens any open string may take
        self._other = _Trie([(p, t) for p, t in usable if not _PLAIN.fullmatch(p)])
        self._by_piece: dict[str, int] = {}
        for piece, token in usable:
            self._by_piece.setdefault(piece, token)
        self._longest = max((len(piece) for piece in self._by_piece), default=0)
        self._spelled: dict[str, list[int] | None] = {}  # ending -> its fewest tokens
        # How near the end of its budget a row starts checking that it can still close: no
        # prefix's shortest ending has more characters than the empty text's, plus at most a lead
        # (`_LEADS`) and the stop. In tokens a later ending can spell worse than the empty text's
        # (fewer merges fit it), so the empty text's count is floored at half its characters.
        self.ending_bound = max(self.ending_length("") or 0, len(_SHORTEST[0]) // 2) + len(_LEADS[-1]) + 1

    def allows(self, text: str, token: int) -> bool:
        """Whether `token` may follow the completion text `text` (itself an action prefix)."""
        if token in self.stop_ids:
            return is_whole_action(text)
        piece = self.pieces[token] if 0 <= token < len(self.pieces) else ""
        return bool(piece) and is_action_prefix(text + piece)

    def ending_tokens(self, text: str) -> list[int] | None:
        """The fewest tokens that make `text` a whole action, then a stop token (when there is
        one): how a reply about to run out of `max_tokens` closes. None if no ending can be
        written with these pieces."""
        ending = shortest_ending(text)
        if ending is None:
            return None
        if ending not in self._spelled:
            self._spelled[ending] = self._spell(ending)
        tokens = self._spelled[ending]
        if tokens is None:
            return None
        return [*tokens, *self._closing_stop]

    def ending_length(self, text: str) -> int | None:
        """len(ending_tokens(text)), None where there is no ending."""
        tokens = self.ending_tokens(text)
        return None if tokens is None else len(tokens)

    def _spell(self, text: str) -> list[int] | None:
        """`text` in the fewest tokens whose pieces concatenate to it (None if no such tokens)."""
        fewest: list[list[int] | None] = [None] * len(text) + [[]]  # fewest[i]: text[i:]
        for start in range(len(text) - 1, -1, -1):
            for end in range(start + 1, min(len(text), start + self._longest) + 1):
                token, rest = self._by_piece.get(text[start:end]), fewest[end]
                shortest = fewest[start]
                if token is not None and rest is not None:
                    if shortest is None or len(rest) + 1 < len(shortest):
                        fewest[start] = [token, *rest]
        return fewest[0]

    def allowed(self, text: str) -> list[int]:
        """Every token `allows` after `text`, sorted. Inside a free string every plain token fits
        and only the others are tested; elsewhere all are."""
        if is_action_prefix(text + _FREE_TEXT_PROBE):
            return sorted(self._plain + self._other.fitting(text))
        return sorted((list(self.stop_ids) if is_whole_action(text) else []) + self._all.fitting(text))


class _Trie:
    """Token pieces sorted, so that the pieces sharing a prefix form a run: `fitting` tests each
    shared prefix once, and the hundreds of tokens that start with a space cost one test where a
    space cannot come next."""

    def __init__(self, sorted_pieces: list[tuple[str, int]]) -> None:
        self.keys = [piece for piece, _ in sorted_pieces]
        self.tokens = [token for _, token in sorted_pieces]

    def fitting(self, text: str) -> list[int]:
        """The tokens whose piece keeps `text` an action prefix."""
        keys, found = self.keys, []
        stack = [(0, len(keys), 0)]  # keys[start:end] share their first `depth` characters, which fit
        while stack:
            start, end, depth = stack.pop()
            while start < end:
                key = keys[start]
                if len(key) == depth:  # the token is the shared prefix itself
                    found.append(self.tokens[start])
                    start += 1
                    continue
                stem = key[: depth + 1]
                following = ord(stem[-1]) + 1  # the first character after the run's
                run_end = (
                    end if following > 0x10FFFF else bisect_left(keys, stem[:-1] + chr(following), start, end)
                )
                if is_action_prefix(text + stem):
                    stack.append((start, run_end, depth + 1))
                start = run_end
        return found
