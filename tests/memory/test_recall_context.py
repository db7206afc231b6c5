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


def test_a_name_everywhere_in_the_askers_history_does_not_outweigh_the_telling_word(
    store: MemoryStore,
) -> None:
    # Globally "mel" is rare (only ana's chat has it) and "paint" common (bo paints a lot):
    # counted in the whole index, the name would decide. Counted in ana's messages, where
    # every other line says "Mel", the word that tells them apart does.
    chat = [f"Mel: we went hiking again, day {n}" for n in range(6)] + ["Caroline: I love to paint lakes"]
    store.add_messages(
        [
            NewMessage("s1", "ana", "user", text, ts(1, second=30 * n), f"ana{n}")
            for n, text in enumerate(chat)
        ]
        + [
            NewMessage("s9", "bo", "user", f"paint job number {n} done", ts(2, second=n), f"bo{n}")
            for n in range(12)
        ]
        + [NewMessage("s8", "bo", "user", f"filler message {n}", ts(3, second=n), f"f{n}") for n in range(30)]
    )
    assert found(store, "What does Mel like to paint?")[0] == "ana6"


def test_context_never_lends_to_the_assistant(store: MemoryStore) -> None:
    store.add_messages(
        [
            NewMessage("s1", "ana", "user", "which team should I back this season?", ts(1), "asks"),
            NewMessage(
                "s1", "ana", "assistant", "The Minnesota Wolves, clearly.", ts(1, second=30), "answer"
            ),
        ]
    )
    assert found(store, "Which team did I back this season?") == ["asks"]


def test_the_turn_before_a_match_joins_a_questions_ranking(store: MemoryStore) -> None:
    store.add_messages(
        [
            NewMessage("s1", "ana", "user", "look at my new purple shoes", ts(1), "shoes"),
            NewMessage(
                "s1", "ana", "user", "love that colour! are they for the gym?", ts(1, second=30), "asks"
            ),
            NewMessage("s1", "ana", "user", "no, for running every morning", ts(1, second=60), "reply"),
        ]
    )
    assert found(store, "When does she go running?") == ["reply", "asks"]
    assert found(store, "running") == ["reply"]  # keywords: only what holds them
