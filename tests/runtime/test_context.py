"""runtime/context.py: what the planner sees, built from a real memory database."""

from __future__ import annotations

from memory import MemoryStore
from runtime.context import ContextSettings, SessionRef, build_messages

RECALLED = "From earlier conversations"


def session(store: MemoryStore, key: str, user: str = "ana") -> SessionRef:
    user_id = store.ensure_user(user)
    return SessionRef(store.ensure_session(key, user_id=user_id), key, user_id, user)


def say(store: MemoryStore, where: SessionRef, text: str, role: str = "user") -> None:
    store.add_message(session_id=where.id, user_id=where.user_id, role=role, content=text)


def system_prompt(store: MemoryStore, where: SessionRef, question: str) -> str:
    return build_messages(store, where, question, ContextSettings(history_turns=4))[0]["content"]


def test_a_history_shown_in_full_recalls_nothing(store: MemoryStore) -> None:
    here = session(store, "telegram:7:")
    say(store, here, "my sister moved to Lisbon")
    say(store, here, "Noted.", role="assistant")
    say(store, here, "where did my sister move?")

    assert RECALLED not in system_prompt(store, here, "where did my sister move?")


def test_messages_beyond_the_recent_turns_are_recalled(store: MemoryStore) -> None:
    elsewhere, here = session(store, "slack:D1:"), session(store, "telegram:7:")
    say(store, elsewhere, "my sister moved to Lisbon")
    say(store, here, "where did my sister move?")

    assert f"{RECALLED} (may help):\n- [" in system_prompt(store, here, "where did my sister move?")
    assert "Lisbon" in system_prompt(store, here, "where did my sister move?")


def test_older_turns_of_the_same_session_are_recalled(store: MemoryStore) -> None:
    here = session(store, "telegram:7:")
    say(store, here, "my sister moved to Lisbon")
    for n in range(4):  # pushes the first message out of the 4 recent turns
        say(store, here, f"small talk {n}")

    assert "Lisbon" in system_prompt(store, here, "where did my sister move?")


def test_other_peoples_messages_are_never_recalled(store: MemoryStore) -> None:
    say(store, session(store, "telegram:8:", user="ben"), "my sister moved to Lisbon")
    here = session(store, "telegram:7:")
    say(store, here, "where did my sister move?")

    assert "Lisbon" not in system_prompt(store, here, "where did my sister move?")
