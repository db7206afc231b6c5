"""remember, forget_fact and profile (runtime/tools/profile_tools.py) through the real Toolbox: they
act on the context's user only, however the model phrases the call."""

from __future__ import annotations

import json

import pytest

from memory import MemoryStore
from runtime.tools import ToolContext, builtin_toolbox

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def context_for(store: MemoryStore, handle: str, text: str = "remember this") -> ToolContext:
    user_id = store.ensure_user(handle)
    session = store.ensure_session(f"s-{handle}", user_id=user_id)
    request = store.add_message(session_id=session, user_id=user_id, role="user", content=text)
    episode = store.episodes.start(session, user_id, text, request)
    return ToolContext(user=handle, memory=store, session_id=session, episode_id=episode)


async def call(context: ToolContext, name: str, **arguments: object) -> tuple[str, bool]:
    result = await builtin_toolbox().call(name, json.dumps(arguments), context)
    return result.text, result.is_error


async def test_remember_profile_and_forget(store: MemoryStore) -> None:
    ana = context_for(store, "ana", "remember that I'm vegetarian")
    text, error = await call(ana, "remember", statement="Is vegetarian", kind="preference")
    assert not error and text.startswith("Remembered: #")
    again, _ = await call(ana, "remember", statement="is vegetarian")
    assert again.startswith("Already known")
    ana_id = store.user_id("ana")
    assert ana_id is not None
    [fact] = store.facts.for_user(ana_id)
    request = store.episodes.get(ana.episode_id or 0).request_message_id
    assert (fact.kind, fact.mentions, fact.sources, fact.confidence) == ("preference", 2, (request,), 0.95)
    await call(ana, "remember", statement="Works night shifts at the hospital", kind="biography")

    listed, _ = await call(ana, "profile")
    assert f"#{fact.id} [preference] Is vegetarian" in listed and "night shifts" in listed
    forgotten, error = await call(ana, "forget_fact", fact="the hospital night shifts")
    assert not error and "Works night shifts" in forgotten
    by_id, error = await call(ana, "forget_fact", fact=f"#{fact.id}")
    assert not error and by_id.startswith(f"Forgotten: #{fact.id}") and store.facts.for_user(ana_id) == []
    nothing, error = await call(ana, "forget_fact", fact="vegetarian")
    assert error and "no fact" in nothing


async def test_the_tools_never_reach_another_users_facts(store: MemoryStore) -> None:
    ana, bo = context_for(store, "ana"), context_for(store, "bo")
    await call(ana, "remember", statement="Keeps the spare key under the blue flowerpot")
    ana_id = store.user_id("ana")
    assert ana_id is not None
    [secret] = store.facts.for_user(ana_id)

    listed, _ = await call(bo, "profile")
    assert listed == "Nothing known about this user yet."
    text, error = await call(bo, "forget_fact", fact=f"#{secret.id}")
    assert error and "no fact" in text
    text, error = await call(bo, "forget_fact", fact="spare key blue flowerpot")
    assert error
    text, error = await call(bo, "remember", statement="x", user="ana")  # no argument names a user
    assert error and "user is not an argument" in text
    assert store.facts.for_user(ana_id) == [secret]
    text, error = await call(ana, "remember", statement="x" * 301)
    assert error and "under 300" in text
