"""The executor's action format as a regular language, so that sampling can keep to it.

    constraint = ActionConstraint(pieces, stop_ids)   # pieces[t]: token t's bytes (or text)
    state = constraint.start                          # then, per sampled token:
    state = constraint.advance(state, token)          # None: the token would leave the format
    constraint.allowed_after(state)                   # every token that would not
    constraint.closing(state)                         # the fewest-token way to finish, then a stop

`ACTION_PATTERN` accepts actions.py's format in its canonical layout, the one the system prompt
shows and `json.dumps` writes (one space after each colon and comma, none elsewhere):

    {"analysis": "...", "commands": [{"keystrokes": "...", "timeout": 10}, ...], "task_complete": false}

in that key order, 0-8 commands (none only with "task_complete": true), a keystrokes string with
at least one character that is not blank, and a positive timeout. It is a subset of what
`parse_action` accepts, so a whole match always parses (tests/runtime check this on generated
strings). The layout is fixed because free whitespace is a sink: a small model pushed off the
text it wanted to write (a quote inside `keystrokes`) fills the reply with blank lines until
`max_tokens` cuts it. A reply must also end in time: `closing(state)` is the shortest text that
makes the reply whole, spelled in the fewest tokens, then a stop token; the sampler writes it
once a row's budget would otherwise run out inside the action.

`is_action_prefix` and `is_whole_action` read the pattern with `regex` (partial matching): the
format as text, for tests and for checking a reply after the fact. Sampling instead walks an
automaton: outlines-core (the library vLLM's structured outputs use) compiles the pattern into a
deterministic automaton over bytes and indexes which tokens lead from each state to which. A row
keeps its state, so a token costs one table lookup, where matching the text so far again at every
token cost O(length) and, with the ending's search near the budget, doubled the sampling time of
a 64-token reply (measured on the quickstart's executor: 2.2 s against 1.2 s unconstrained for a
replay of 16 tasks x 8 attempts). The automaton reads the tokens' bytes, so a token holding half
of a multi-byte character is allowed exactly where the character may go. The shortest ending of
every state is found once, by a breadth-first search backwards from the accepting states over
single bytes; its filler characters are the plainest (`a` where any visible character will do,
`1` for a number).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Sequence

import regex
from outlines_core import Index, Vocabulary

_HEX = "[0-9a-fA-F]"
# A \u escape names a character: a surrogate only as the first half of a pair followed by its
# second half (JSON allows a lone one, but it is no text: `parse_action` refuses it).
_UNICODE = (
    rf"u(?:[0-9a-cA-CeEfF]{_HEX}{{3}}|[dD][0-7]{_HEX}{{2}}|[dD][89abAB]{_HEX}{{2}}\\u[dD][c-fC-F]{_HEX}{{2}})"
)
_ESCAPE = rf'\\(?:["\\/bfnrt]|{_UNICODE})'
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


def is_action_prefix(text: str) -> bool:
    """Whether `text` is a whole action or can still be extended into one."""
    return _ACTION.fullmatch(text, partial=True) is not None


def is_whole_action(text: str) -> bool:
    return _ACTION.fullmatch(text) is not None


class ActionConstraint:
    """See the module docstring. `pieces[t]` is token t's bytes, or its text (written as UTF-8);
    empty for tokens never to sample (special tokens, ids past the tokenizer's vocabulary).
    `stop_ids` end a completion, and only once it is a whole action.

    States are the automaton's (ints); None stands for "outside the format", where nothing is
    allowed. The index also holds one hidden token per byte (ids from len(pieces) on), never
    allowed to the sampler: they let any text be walked (`state_of`) and the endings be found
    over bytes, and they keep the index buildable when the pieces cannot spell the format."""

    def __init__(self, pieces: Sequence[str | bytes], stop_ids: Collection[int]) -> None:
        raw = [piece.encode() if isinstance(piece, str) else bytes(piece) for piece in pieces]
        self.pieces = [piece.decode("utf-8", "replace") for piece in raw]  # token texts, for display
        self.stop_ids = frozenset(stop_ids)
        self._closing_stop = sorted(self.stop_ids)[:1]  # the stop token a closing writes (if any)
        self._size = len(raw)
        vocabulary: dict[bytes, list[int]] = {}
        self._by_piece: dict[bytes, int] = {}
        for token, piece in enumerate(raw):
            if piece and token not in self.stop_ids:
                vocabulary.setdefault(piece, []).append(token)
                self._by_piece.setdefault(piece, token)
        for byte in range(256):
            vocabulary.setdefault(bytes([byte]), []).append(self._size + byte)
        eos = self._size + 256  # the index wants one; stops are handled here, not by it
        self._index = Index(ACTION_PATTERN, Vocabulary(eos, vocabulary))
        self.start: int = self._index.get_initial_state()
        self._longest = max((len(piece) for piece in self._by_piece), default=0)
        self._endings = _shortest_endings(self._index, self.start, self._size)
        self._closings: dict[int, list[int] | None] = {}
        lengths = [len(c) for c in map(self.closing, self._endings) if c is not None]
        # A row whose budget is above this can write any allowed token and still close in time.
        self.ending_bound: int = max(lengths, default=0)

    def advance(self, state: int | None, token: int) -> int | None:
        """The state after `token`, or None where the format does not allow it."""
        if state is None:
            return None
        if token in self.stop_ids:
            return state if self._index.is_final_state(state) else None
        if not 0 <= token < self._size:
            return None
        return self._index.get_next_state(state, token)

    def allowed_after(self, state: int | None) -> list[int]:
        """Every token `advance` accepts in `state`, sorted."""
        if state is None:
            return []
        tokens = [token for token in self._index.get_allowed_tokens(state) if token < self._size]
        if self._index.is_final_state(state):
            tokens += self.stop_ids
        return sorted(set(tokens))

    def closing(self, state: int | None) -> list[int] | None:
        """The fewest tokens that spell `state`'s shortest ending, then a stop token (when there
        is one): how a reply about to run out of `max_tokens` closes. None if the pieces cannot
        write it."""
        if state is None:
            return None
        if state not in self._closings:
            ending = self._endings.get(state)
            tokens = None if ending is None else self._spell(ending)
            self._closings[state] = None if tokens is None else [*tokens, *self._closing_stop]
        return self._closings[state]

    def closing_length(self, state: int | None) -> int | None:
        """len(closing(state)), None where there is no closing."""
        tokens = self.closing(state)
        return None if tokens is None else len(tokens)

    # The same, from a text (tests, and anything holding a reply rather than a state) ---------

    def state_of(self, text: str) -> int | None:
        """The state after `text`'s bytes, None if `text` is no action prefix."""
        state: int | None = self.start
        for byte in text.encode():
            if state is None:
                return None
            state = self._index.get_next_state(state, self._size + byte)
        return state

    def allows(self, text: str, token: int) -> bool:
        """Whether `token` may follow the completion text `text`."""
        return self.advance(self.state_of(text), token) is not None

    def allowed(self, text: str) -> list[int]:
        return self.allowed_after(self.state_of(text))

    def ending_tokens(self, text: str) -> list[int] | None:
        return self.closing(self.state_of(text))

    def ending_length(self, text: str) -> int | None:
        return self.closing_length(self.state_of(text))

    def _spell(self, text: bytes) -> list[int] | None:
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


# The order in which an ending's characters are preferred among those of equal length: a plain
# letter where any visible character will do, then digits (a timeout's "1"), then the rest.
_PREFERRED = sorted(range(256), key=lambda byte: (byte != ord("a"), not ord("0") <= byte <= ord("9"), byte))


def _shortest_endings(index: Index, start: int, byte_ids: int) -> dict[int, bytes]:
    """For every state reachable from `start`, the shortest bytes that lead it to an accepting
    state (preferring `_PREFERRED`'s order among equals); states with no ending are left out.
    `byte_ids`: the id of the hidden token of byte 0 (byte b is byte_ids + b)."""
    edges: dict[int, list[tuple[int, int]]] = {}  # state -> [(byte, next state)]
    queue, seen = deque([start]), {start}
    while queue:
        state = queue.popleft()
        edges[state] = []
        for byte in _PREFERRED:
            following = index.get_next_state(state, byte_ids + byte)
            if following is not None:
                edges[state].append((byte, following))
                if following not in seen:
                    seen.add(following)
                    queue.append(following)
    before: dict[int, list[int]] = {}
    for state, out in edges.items():
        for _, following in out:
            before.setdefault(following, []).append(state)
    distance = {state: 0 for state in edges if index.is_final_state(state)}
    queue = deque(distance)
    while queue:  # backwards from the accepting states: each state's distance in bytes
        state = queue.popleft()
        for previous in before.get(state, []):
            if previous not in distance:
                distance[previous] = distance[state] + 1
                queue.append(previous)
    endings: dict[int, bytes] = {}
    for state in sorted(distance, key=distance.__getitem__):  # nearest first: each extends a known one
        if distance[state] == 0:
            endings[state] = b""
            continue
        for byte, following in edges[state]:  # in preferred order: the first that gets closer
            if distance.get(following) == distance[state] - 1:
                endings[state] = bytes([byte]) + endings[following]
                break
    return endings
