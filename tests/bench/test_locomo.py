"""bench/locomo.py: LoCoMo-format conversations as temper messages and labelled questions."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from bench.locomo import load_locomo  # noqa: E402

FIXTURE = ROOT / "tests/fixtures/locomo-tiny.json"


def test_turns_become_one_users_messages_with_speaker_and_session_time() -> None:
    messages, _ = load_locomo(FIXTURE)
    assert len(messages) == 8
    first = messages[0]
    assert (first.user, first.session, first.role) == ("tiny-1", "tiny-1/session_1", "user")
    assert first.content == "Ada: Hey Ben! I signed with a new team last week."
    assert first.external_id == "tiny-1:D1:1"
    assert first.ts == 1683554160.0  # 1:56 pm on 8 May, 2023, UTC
    assert messages[1].ts == first.ts + 30
    pottery = next(m for m in messages if m.external_id == "tiny-1:D1:4")
    assert "bowl" not in pottery.content  # image captions are not what was typed
    assert {m.user for m in messages} == {"tiny-1", "tiny-2"}


def test_questions_of_categories_one_to_four_with_lenient_evidence() -> None:
    _, questions = load_locomo(FIXTURE)
    assert len(questions) == 6  # the adversarial one is skipped
    by_text = {q["question"]: q for q in questions}
    assert by_text["What class did Ben start?"]["answer_ids"] == ["tiny-1:D1:4"]  # "D:1:4"
    assert by_text["When did Ada go hiking?"]["answer_ids"] == ["tiny-1:D2:2", "tiny-1:D1:1"]  # "D2:2; D1:1"
    assert by_text["When did Ada go hiking?"]["kind"] == "2"
    assert by_text["What is Ada's favourite colour?"]["answer_ids"] == []  # names no turn: a miss
    assert by_text["What is the name of Cleo's puppy?"]["user"] == "tiny-2"
