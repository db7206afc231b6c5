"""Session context and date windows in search: what a question finds beside the matching turn."""

from datetime import UTC, datetime

from memory import MemoryStore, NewMessage


def ts(day: int, month: int = 5, second: int = 0) -> float:
    return datetime(2023, month, day, 12, tzinfo=UTC).timestamp() + second


def found(store: MemoryStore, text: str, user: str = "ana", limit: int = 10) -> list[str]:
    return [hit.external_id or "" for hit in store.search(text, user=user, limit=limit)]


def test_a_question_finds_the_reply_to_the_turn_that_asked(store: MemoryStore) -> None:
    store.add_messages(
        [
            NewMessage("s1", "ana", "user", "Tim: Congrats! Which team did you sign with?", ts(1), "asked"),
            NewMessage("s1", "ana", "user", "The Minnesota Wolves! Can't wait.", ts(1, second=30), "reply"),
            NewMessage("s1", "ana", "user", "Tim: My team lost again, sadly.", ts(1, second=60), "other"),
        ]
    )
    assert found(store, "Which team did John sign with?")[:2] == ["asked", "reply"]
    # Keywords are not a question: only the messages that contain them.
    assert "reply" not in found(store, "team sign")


def test_a_reply_by_another_user_in_a_group_chat_never_enters(store: MemoryStore) -> None:
    store.add_messages(
        [
            NewMessage("group", "ana", "user", "Which team did you sign with?", ts(1), "ana-asks"),
            NewMessage(
                "group", "bo", "user", "The Minnesota Wolves, secretly.", ts(1, second=30), "bo-replies"
            ),
        ]
    )
    assert found(store, "which team did they sign with?") == ["ana-asks"]
    assert "bo-replies" in found(store, "Minnesota Wolves", user="bo")


def test_a_named_date_ranks_that_time_first_without_filtering(store: MemoryStore) -> None:
    store.add_messages(
        [
            NewMessage(
                "s1", "ana", "user", "We had dinner with the Garcias, lovely evening", ts(3, 4), "april"
            ),
            NewMessage("s2", "ana", "user", "Dinner with my old colleagues tonight", ts(3, 5), "may"),
            NewMessage("s3", "ana", "user", "Dinner with the Garcias again, lovely", ts(3, 6), "june"),
        ]
    )
    assert found(store, "Who did Ana have dinner with on May 3, 2023?")[0] == "may"
    assert set(found(store, "Who did Ana have dinner with on May 3, 2023?")) == {"april", "may", "june"}
    # Nothing said around the date: the rest is still found.
    assert found(store, "Who did Ana have dinner with on 3 January, 2020?")[0] in {"april", "june"}
