"""The learn stage's skill work through a real Agent: real litellm against the scripted fake
planner and judge, a real SQLite memory, a real skill library on disk, the local sandbox.

A successful multi-step turn creates a skill; the next similar turn sees it in its prompt, views
it, and its review's attempt to create a near-duplicate is turned into a patch of the skill it
used. A skill that keeps failing is flagged, revised once, then archived.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory import MemoryStore
from runtime import Agent, AgentSettings, SkillCatalog, SkillSettings, TurnRecord, learn_skills
from runtime.inbound import Inbound
from runtime.models import ChatModel, ModelSettings, RetryPolicy, close_model_clients
from runtime.sandbox import SandboxOptions
from runtime.skill_catalog import HEADER
from runtime.tools import builtin_toolbox
from runtime.workspaces import Workspaces
from skills import SkillDocument, SkillLibrary
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.anyio

SCAFFOLD = {
    "action": "create",
    "name": "python-project-scaffold",
    "reason": "a reusable way to start a Python project",
    "description": "Create a Python project skeleton (src package, tests folder, pyproject.toml). "
    "Use when asked to scaffold or start a new Python project.",
    "body": "\n1. `mkdir -p NAME/src/NAME NAME/tests`\n2. write `NAME/pyproject.toml` with the project name\n"
    "3. `touch NAME/src/NAME/__init__.py`\n4. list the tree to check\n",
}
NEAR_DUPLICATE = {
    "action": "create",
    "name": "new-python-project",
    "reason": "worth keeping",
    "description": "Scaffold a new Python project: a src package, a tests folder and pyproject.toml. "
    "Use when starting a Python project.",
    "body": "\n1. `mkdir -p NAME/src/NAME NAME/tests`\n2. `touch NAME/src/NAME/__init__.py`\n"
    "3. write NAME/pyproject.toml\n4. list the tree\n",
}
PATCH = {
    "action": "patch",
    "name": "python-project-scaffold",
    "reason": "pyproject needs a build backend",
    "edits": [{"old": "with the project name", "new": "with the project name and a [build-system] table"}],
}


def chat_model(server: FakeOpenAI, model: str) -> ChatModel:
    return ChatModel(
        ModelSettings(model, api_base=server.base_url, api_key="sk-test", retry=RetryPolicy(max_retries=0))
    )


@pytest.fixture
def catalog(store: MemoryStore, tmp_path: Path) -> SkillCatalog:
    return SkillCatalog(SkillLibrary(tmp_path / "skills"), store, SkillSettings(sync_interval_s=0))


def make_agent(store: MemoryStore, server: FakeOpenAI, tmp_path: Path, catalog: SkillCatalog) -> Agent:
    workspaces = Workspaces("local", SandboxOptions(), tmp_path / "snapshots", store.set_workspace_snapshot)
    return Agent(
        store,
        chat_model(server, "openai/planner"),
        builtin_toolbox(skills=catalog),
        workspaces,
        judge=chat_model(server, "openai/judge"),
        settings=AgentSettings(stream=False),
        skills=catalog,
    )


async def run(agent: Agent, text: str, message_id: str) -> list:
    inbound = Inbound(platform="cli", chat_id="c1", user_id="ana", text=text, platform_message_id=message_id)
    events = [event async for event in agent.turn(inbound)]
    await agent.drain()
    return events


def shell(command: str) -> dict:
    return {"tool_calls": [{"name": "shell", "arguments": {"command": command}}], "model": "planner"}


async def test_a_successful_multi_step_turn_creates_a_skill_and_the_next_patches_it(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path, catalog: SkillCatalog
) -> None:
    agent = make_agent(store, server, tmp_path, catalog)
    # Turn 1: three tool calls, one of them failing on the way; the judge says it succeeded.
    server.enqueue(**shell("mkdir -p demo/src/demo demo/tests"))
    server.enqueue(
        tool_calls=[{"name": "read_file", "arguments": {"path": "demo/pyproject.toml"}}], model="planner"
    )
    server.enqueue(
        **shell(
            "printf '[project]\\nname = \"demo\"\\n' > demo/pyproject.toml && touch demo/src/demo/__init__.py"
        )
    )
    server.enqueue(text="Created the demo project.", model="planner")
    server.enqueue(text='{"score": 1, "reason": "the tree exists"}', model="judge")
    server.enqueue(text="```json\n" + json.dumps(SCAFFOLD) + "\n```", model="planner")  # the review
    await run(agent, "start a new python project called demo", "m1")

    assert catalog.library.names() == ["python-project-scaffold"]
    created = catalog.library.load("python-project-scaffold")
    first_episode = store.episodes.latest(store.session_id("cli:c1:")).id
    assert created.metadata["created-by"] == "agent" and created.metadata["source-episode"] == str(
        first_episode
    )
    assert created.trusted and created.version == 1
    review = server.requests[-1]["messages"]
    assert "Close skills: none" in review[1]["content"] and "called shell(" in review[1]["content"]

    # Turn 2, a similar request: the skill is listed in the prompt, viewed, used; the review
    # tries to create a near-duplicate, is shown the duplicate, and patches it instead.
    server.enqueue(
        tool_calls=[{"name": "skill_view", "arguments": {"name": "python-project-scaffold"}}], model="planner"
    )
    server.enqueue(**shell("mkdir -p beta/src/beta beta/tests"))
    server.enqueue(**shell("touch beta/src/beta/__init__.py"))
    server.enqueue(**shell("printf '[project]\\nname = \"beta\"\\n' > beta/pyproject.toml && ls -R beta"))
    server.enqueue(text="Created beta.", model="planner")
    server.enqueue(text='{"score": 1, "reason": "done"}', model="judge")
    server.enqueue(text=json.dumps(NEAR_DUPLICATE), model="planner")
    server.enqueue(text=json.dumps(PATCH), model="planner")
    before = len(server.requests)
    await run(agent, "scaffold another python project named beta", "m2")

    system = server.requests[before]["messages"][0]["content"]
    assert HEADER in system and "- python-project-scaffold: Create a Python project skeleton" in system
    assert catalog.library.names() == ["python-project-scaffold"]  # patched, not duplicated
    patched = catalog.library.load("python-project-scaffold")
    assert "[build-system] table" in patched.body and patched.version == 2
    assert [v.note.split(":")[0] for v in catalog.library.history("python-project-scaffold")] == [
        "created by agent",
        f"patched after episode {first_episode + 1}",
    ]
    duplicate_prompt = server.requests[-1]["messages"][-1]["content"]
    assert duplicate_prompt.startswith("Skill python-project-scaffold already covers this procedure")
    second = store.episodes.latest(store.session_id("cli:c1:")).id
    assert store.skills.viewed_in(second) == ["python-project-scaffold"]
    assert store.skills.offered_in(second) == ["python-project-scaffold"]
    assert catalog.stats("python-project-scaffold").uses == 1
    assert server.unanswered == [] and server.pending() == 0
    await agent.close()


async def test_a_trivial_or_failed_turn_is_not_reviewed(
    store: MemoryStore, server: FakeOpenAI, tmp_path: Path, catalog: SkillCatalog
) -> None:
    agent = make_agent(store, server, tmp_path, catalog)
    server.enqueue(**shell("ls"))
    server.enqueue(text="Nothing there.", model="planner")
    server.enqueue(text='{"score": 1, "reason": "fine"}', model="judge")
    await run(agent, "what is in the workspace?", "t1")  # one tool call: trivial
    for command in ("mkdir a", "mkdir b", "mkdir c"):
        server.enqueue(**shell(command))
    server.enqueue(text="Done, I think.", model="planner")
    server.enqueue(text='{"score": 0.5, "reason": "half done"}', model="judge")
    await run(agent, "make three folders and fill them", "t2")  # not a success
    assert catalog.library.names() == []
    assert server.pending() == 0 and server.unanswered == []  # no review was asked for
    await agent.close()


def rated_turn(store: MemoryStore, catalog: SkillCatalog, reward: float, viewed: bool) -> int:
    user = store.ensure_user("ana")
    episode = store.episodes.start(store.ensure_session("s", user_id=user), user, f"reward {reward}")
    store.skills.record_offered(episode, ["flaky-deploy"])
    if viewed:
        store.skills.record_viewed(episode, "flaky-deploy")
    store.episodes.record_reward(episode, reward, "verifier", "check exited 1" if reward == 0 else "ok")
    return episode


async def test_a_failing_skill_is_flagged_revised_once_then_archived(
    store: MemoryStore, server: FakeOpenAI, catalog: SkillCatalog
) -> None:
    catalog.create(
        SkillDocument(
            "flaky-deploy",
            "Deploy the site with rsync. Use when asked to deploy the site.",
            "\n1. rsync the build folder\n2. done\n",
        )
    )
    planner = chat_model(server, "openai/planner")
    for _ in range(6):
        rated_turn(store, catalog, 1.0, viewed=False)  # offered, not opened: 100% success
    last = 0
    for reward in (1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0):  # with it: 1 of 8
        last = rated_turn(store, catalog, reward, viewed=True)
    record = TurnRecord(last, "deploy", [])
    revision = {
        "action": "patch",
        "name": "flaky-deploy",
        "reason": "the build step was missing",
        "edits": [{"old": "1. rsync the build folder", "new": "1. build first\n2. rsync the build folder"}],
    }
    server.enqueue(text=json.dumps(revision), model="planner")
    learned = await learn_skills(catalog, planner, record)
    assert learned.review.action == "skipped"  # a failed turn is not reviewed
    assert [(c.name, c.state) for c in learned.health] == [
        ("flaky-deploy", "flagged"),
        ("flaky-deploy", "revised"),
    ]
    assert "build first" in catalog.library.text("flaky-deploy")
    assert "reward 0.0" in server.requests[-1]["messages"][0]["content"]  # failures shown to the reviser
    assert catalog.stats("flaky-deploy").uses == 0  # judged afresh after the revision

    for _ in range(catalog.settings.min_uses):  # the revision did not help
        last = rated_turn(store, catalog, 0.0, viewed=True)
    learned = await learn_skills(catalog, planner, TurnRecord(last, "deploy", []))
    assert [(c.name, c.state) for c in learned.health] == [("flaky-deploy", "archived")]
    assert catalog.library.names() == [] and catalog.library.archived() == ["flaky-deploy"]
    assert catalog.search("deploy the site") == []
    health = store.skills.health("flaky-deploy")
    assert health is not None and health.state == "archived"
    catalog.restore("flaky-deploy")
    assert [m.name for m in catalog.search("deploy the site")] == ["flaky-deploy"]
    assert store.skills.health("flaky-deploy") is None
    await close_model_clients()
