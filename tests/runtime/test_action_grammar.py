"""runtime/executor/action_grammar.py: the action format as a regular language, and the token
constraint built on it."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.executor.action_grammar import (
    ACTION_PATTERN,
    ActionConstraint,
    is_action_prefix,
    is_whole_action,
)
from runtime.executor.actions import parse_action

CANONICAL = json.dumps(
    {
        "analysis": "Copy it.",
        "commands": [{"keystrokes": "cp notes.txt vault/\n", "timeout": 10}],
        "task_complete": True,
    }
)
# Replies the quickstart's executor wrote at temperature 1 (decoded from gate episodes): each
# breaks its JSON, and the constraint must refuse it at the character where it breaks.
GARBLED = [
    ('{"analysis": "Run it.", "commands": [{"keystrokes": "cp songs.txt st "Run', 'st "R'),
    ('{"analysis":Run the commands', ":R"),
    ('{"analysis": "Run it.", "commands": [{"keystrokes": "tr a-z A that.", "sort', '", "s'),
]


# One token per byte (and a stop): the constraint's automaton with nothing merged, so a closing
# spells its ending byte by byte.
BYTE_STOP = 256
BYTES = ActionConstraint([bytes([byte]) for byte in range(256)] + [b""], {BYTE_STOP})


def shortest_ending(prefix: str) -> str | None:
    """The text `BYTES` closes `prefix` with (the stop left out), None where it cannot."""
    closing = BYTES.ending_tokens(prefix)
    return None if closing is None else bytes(closing[:-1]).decode()


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.from_regex(ACTION_PATTERN, fullmatch=True))
def test_every_whole_match_is_a_valid_action(text: str) -> None:
    assert is_whole_action(text)
    action = parse_action(text)
    assert 1 <= len(action.commands) <= 8 or (action.task_complete and not action.commands)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.from_regex(ACTION_PATTERN, fullmatch=True), st.text(max_size=3))
def test_the_automaton_and_the_pattern_agree_on_every_prefix(action: str, noise: str) -> None:
    """What sampling walks (outlines-core's automaton) is the language `is_action_prefix` reads:
    on every prefix of an action, and on a prefix with a few characters of noise after it."""
    for end in range(len(action) + 1):
        for text in (action[:end], action[:end] + noise):
            state = BYTES.state_of(text)
            assert (state is not None) == is_action_prefix(text), text
            assert BYTES.allows(text, BYTE_STOP) == is_whole_action(text), text


def test_a_character_split_across_tokens_is_allowed_only_where_the_character_may_go() -> None:
    """Byte-level tokenizers split characters: the automaton reads bytes, so half of "é" may
    follow only where the whole "é" may, and only the other half may follow it."""
    first, second = "é".encode()
    pieces = [b'{"analysis": "', bytes([first]), bytes([second]), b'"', b"x", b""]
    constraint = ActionConstraint(pieces, {5})
    inside = '{"analysis": "'
    assert constraint.allows(inside, 1) and not constraint.allows("{", 1)  # only inside a string
    half = constraint.advance(constraint.state_of(inside), 1)
    assert constraint.allowed_after(half) == [2]  # the character's other half, and nothing else
    assert constraint.advance(half, 2) == constraint.state_of(inside + "é")


def test_every_prefix_of_a_canonical_action_can_still_become_one() -> None:
    assert (
        is_whole_action(CANONICAL) and parse_action(CANONICAL).commands[0].keystrokes == "cp notes.txt vault/"
    )
    assert all(is_action_prefix(CANONICAL[:end]) for end in range(len(CANONICAL) + 1))
    assert not any(is_whole_action(CANONICAL[:end]) for end in range(len(CANONICAL)))
    assert not is_action_prefix(CANONICAL + " ")  # nothing after the closing brace
    assert BYTES.state_of(CANONICAL + " ") is None and BYTES.allowed(CANONICAL) == [BYTE_STOP]


@pytest.mark.parametrize(("reply", "breaks_at"), GARBLED)
def test_garbled_replies_are_refused_where_they_break(reply: str, breaks_at: str) -> None:
    end = reply.index(breaks_at) + len(breaks_at)
    assert not is_action_prefix(reply[:end]) and BYTES.state_of(reply[:end]) is None
    assert is_action_prefix(reply[: end - 1]) and BYTES.state_of(reply[: end - 1]) is not None
    with pytest.raises(ValueError):
        parse_action(reply + '"}]}')


@pytest.mark.parametrize(
    "text",
    [
        '{"analysis": "", "commands": [], "task_complete": false}',  # nothing to do, yet not done
        '{"analysis": "", "commands": [{"keystrokes": " \\n", "timeout": 5}], "task_complete": false}',  # blank
        '{"analysis": "", "commands": [{"keystrokes": "ls", "timeout": 0}], "task_complete": false}',
        '{"commands": [], "analysis": "", "task_complete": true}',  # keys out of order
        '```json\n{"analysis": "", "commands": [], "task_complete": true}',
        '{"analysis": "\\ud83d", "commands": [], "task_complete": true}',  # half a character
        '{"analysis": "\\udc00\\ud83d", "commands": [], "task_complete": true}',  # halves reversed
    ],
)
def test_what_the_parser_would_refuse_or_the_layout_varies_is_no_whole_match(text: str) -> None:
    assert not is_whole_action(text)


def test_a_surrogate_pair_is_one_character_and_a_whole_match() -> None:
    text = '{"analysis": "\\ud83d\\ude00", "commands": [], "task_complete": true}'
    assert is_whole_action(text) and parse_action(text).analysis == "\U0001f600"


def test_the_layout_is_json_dumps_and_an_empty_list_ends_the_task() -> None:
    done = {"analysis": "done", "commands": [], "task_complete": True}
    assert is_whole_action(json.dumps(done)) and parse_action(json.dumps(done)).task_complete
    pretty = json.dumps(done, indent=2)
    assert parse_action(pretty).task_complete and not is_action_prefix(pretty[:3])  # no blank lines to fill


def test_the_constraint_allows_a_stop_only_after_a_whole_action() -> None:
    pieces = ["{", '"analysis": "', "done", '", "commands": [], "task_complete": ', "true", "}", "x", "", '"']
    stop = 7
    constraint = ActionConstraint(pieces, {stop})
    assert constraint.allowed("") == [0]
    assert constraint.allowed("{") == [1, 8]  # the key, or its first character
    inside = '{"analysis": "'
    assert constraint.allowed(inside) == [0, 2, 3, 4, 5, 6, 8]  # any text, or the string's end
    assert not constraint.allows(inside, 1)  # closes the string, then a letter where "," belongs
    whole = '{"analysis": "done", "commands": [], "task_complete": true}'
    assert constraint.allowed(whole) == [stop]
    assert not constraint.allows(whole[:-1], stop) and constraint.allows(whole[:-1], 5)
    assert not constraint.allows(inside, 7)  # the empty piece: never sampled


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.from_regex(ACTION_PATTERN, fullmatch=True), st.floats(0, 1))
def test_every_prefix_has_an_ending_no_longer_than_its_own_rest(action: str, where: float) -> None:
    prefix = action[: int(where * len(action))]
    ending = shortest_ending(prefix)
    assert ending is not None and is_whole_action(prefix + ending)
    assert len(ending.encode()) <= len(action.encode()) - len(prefix.encode())
    assert all(not is_whole_action(prefix + ending[:cut]) for cut in range(len(ending)))


@pytest.mark.parametrize(
    ("prefix", "ending"),
    [
        ("", '{"analysis": "", "commands": [], "task_complete": true}'),
        ('{"analysis": "Run tr >>>>', '", "commands": [], "task_complete": true}'),
        (
            '{"analysis": "", "commands": [{"keystrokes": "tr a-z A>>>>',
            '", "timeout": 1}], "task_complete": true}',
        ),
        (
            '{"analysis": "", "commands": [{"keystrokes": " ',
            'a", "timeout": 1}], "task_complete": true}',
        ),  # not blank
        (
            '{"analysis": "", "commands": [{"keystrokes": "ls\\',
            '"", "timeout": 1}], "task_complete": true}',
        ),  # \"
        (
            '{"analysis": "", "commands": [{"keystrokes": "ls\\u0',
            'aaa", "timeout": 1}], "task_complete": true}',  # hex digits
        ),
        ('{"analysis": "", "commands": [{"keystrokes": "ls", "timeout": 2.', '0}], "task_complete": true}'),
        ('{"analysis": "", "commands": [{"keystrokes": "ls", "timeout": 2}], "task_complete": f', "alse}"),
        (CANONICAL, ""),
        ('{"analysis": "x"}', None),  # no action prefix at all
    ],
)
def test_the_shortest_ending_of_each_kind_of_prefix(prefix: str, ending: str | None) -> None:
    found = shortest_ending(prefix)
    if ending is None:
        assert found is None
    else:
        assert found is not None and len(found) == len(ending) and is_whole_action(prefix + found)
        assert found == ending  # and the plainest filler: "a", "1", "true"


def test_an_ending_is_spelled_in_the_fewest_tokens_then_a_stop() -> None:
    words = [
        "{",
        '"',
        "a",
        "analysis",
        '": "',
        '", "',
        "commands",
        '": [], "',
        "task_complete",
        '": ',
        "true",
        "}",
    ]
    pieces = [*words, "", ",", " ", ":", "[", "]"]
    pieces += [c for c in "nlysiomdtk_epruc" if c not in pieces]
    stop = 12
    constraint = ActionConstraint(pieces, {stop})
    ending = constraint.ending_tokens("")
    assert ending is not None and ending[-1] == stop
    assert [pieces[t] for t in ending[:-1]] == [word for word in words if word != "a"]
    assert constraint.ending_length('{"analysis": "x') == 8 and constraint.ending_tokens(CANONICAL) == [stop]
    assert constraint.ending_bound >= constraint.ending_length("")
    assert ActionConstraint(["{"], {}).ending_tokens("") is None  # the pieces cannot write it
