import pytest

from memory import MemoryStore, ToolCallRecord


@pytest.fixture
def session(store: MemoryStore) -> tuple[int, int]:
    user = store.ensure_user("ana")
    return store.ensure_session("cli:ana", platform="cli", user_id=user), user


def test_a_session_resumes_exactly_as_the_model_saw_it(store: MemoryStore, session) -> None:
    session_id, user = session
    store.add_message(session_id=session_id, user_id=user, role="user", content="list my files")
    call = ToolCallRecord("call_1", "list_files", '{"path": "."}')
    store.add_message(session_id=session_id, user_id=user, role="assistant", content="", tool_calls=[call])
    store.add_message(
        session_id=session_id, user_id=user, role="tool", content="a.txt\nb.txt", tool_call_id="call_1"
    )
    store.add_message(
        session_id=session_id, user_id=user, role="assistant", content="You have a.txt and b.txt."
    )
    summary, turns = store.conversations.load(session_id)
    assert summary is None
    assert [t.to_chat() for t in turns] == [
        {"role": "user", "content": "list my files"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "list_files", "arguments": '{"path": "."}'},
                }
            ],
        },
        {"role": "tool", "content": "a.txt\nb.txt", "tool_call_id": "call_1"},
        {"role": "assistant", "content": "You have a.txt and b.txt."},
    ]
    # A window that would start with the tool result starts after the exchange instead.
    _, last_two = store.conversations.load(session_id, limit=2)
    assert [t.role for t in last_two] == ["assistant"]


def test_summaries_stand_in_for_older_turns(store: MemoryStore, session) -> None:
    session_id, user = session
    ids = [
        store.add_message(session_id=session_id, user_id=user, role="user", content=f"note {i}")
        for i in range(5)
    ]
    store.conversations.add_summary(session_id, ids[2], "The user wrote notes 0 to 2.")
    summary, turns = store.conversations.load(session_id)
    assert summary.text == "The user wrote notes 0 to 2." and summary.through_message_id == ids[2]
    assert [t.content for t in turns] == ["note 3", "note 4"]
    assert len(store.search("note", user="ana")) == 5  # summarised turns stay searchable


def test_rewards_rank_user_over_verifier_over_judge(store: MemoryStore, session) -> None:
    session_id, user = session
    episode = store.episodes.start(session_id, user, "make the tests pass")
    assert store.episodes.record_reward(episode, 0.4, "judge", "looks partly done")
    assert store.episodes.record_reward(episode, 1.0, "verifier", "pytest exit 0")
    assert not store.episodes.record_reward(episode, 0.2, "judge", "late judge")
    assert store.episodes.get(episode).reward_source == "verifier"
    assert store.episodes.record_reward(episode, 0.0, "user", "/bad")
    assert not store.episodes.record_reward(episode, 1.0, "verifier", "rerun")
    stored = store.episodes.get(episode)
    assert (stored.reward, stored.reward_source, stored.reward_reason) == (0.0, "user", "/bad")
    store.episodes.finish(episode, "failed")
    assert store.episodes.latest(session_id).status == "failed"
    with pytest.raises(ValueError):
        store.episodes.record_reward(episode, 2.0, "user")
    with pytest.raises(ValueError):
        store.episodes.finish(episode, "exploded")
