"""The agent loop's own cost: runtime time per turn, fixed prompt overhead, sandbox round trip.

With the fake OpenAI-compatible server answering at once, a turn's time minus the time spent
inside the server is what temper itself costs (context building, memory reads and writes,
litellm, events). Measured with 1,000 turns of history in the session and 100,000 messages in
memory. The baseline is one bare openai-SDK call to the same server in the same run: the floor
any Python client pays for a model call.

    python bench/loop.py [--turns 200] [--memory 100000] [--history 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from memory import MemoryStore, NewMessage  # noqa: E402
from runtime import (  # noqa: E402
    Agent,
    AgentSettings,
    ChatModel,
    Evaluated,
    Inbound,
    ModelSettings,
    RetryPolicy,
    SandboxOptions,
    SkillCatalog,
    Workspaces,
    available_backends,
    builtin_toolbox,
    count_tokens,
    fixed_overhead_messages,
)
from skills import SkillLibrary  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI  # noqa: E402

WORDS = "project meeting lisbon dinner deploy postgres invoice garden bicycle sister flight budget".split()
HERMES_REPORTED_OVERHEAD_TOKENS = 14_000  # Hermes Agent's own figure (DESIGN.md); not measured here


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def fill_memory(store: MemoryStore, messages: int, history: int, rng: random.Random) -> None:
    """`messages` messages of 200 users, and `history` turns in the benchmark's own session."""
    start = time.time() - 90 * 86_400
    batch = [
        NewMessage(f"cli:chat{i % 2000}:", f"cli:user{i % 200}", "user" if i % 2 else "assistant",
                   " ".join(rng.choices(WORDS, k=rng.randint(8, 30))), start + i, f"bulk{i}")
        for i in range(messages)
    ]  # fmt: skip
    for i in range(0, len(batch), 10_000):
        store.add_messages(batch[i : i + 10_000])
    own = [
        NewMessage("cli:bench:", "cli:ana", "user" if i % 2 == 0 else "assistant",
                   f"turn {i // 2}: " + " ".join(rng.choices(WORDS, k=12)), start + messages + i, f"own{i}")
        for i in range(2 * history)
    ]  # fmt: skip
    store.add_messages(own)
    # A session this long has been compacted: its summary stands in for all but the last turns.
    session_id = store.session_id("cli:bench:")
    _, turns = store.conversations.load(session_id)
    store.conversations.add_summary(
        session_id, turns[-24].id, "The user and temper discussed projects, budgets and travel."
    )


async def bare_openai_ms(server: FakeOpenAI, calls: int) -> float:
    import openai

    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-bench", max_retries=0)
    samples = []
    for _ in range(calls):
        server.enqueue(text="ok")
        inside = server.time_inside_s
        started = time.perf_counter()
        await client.chat.completions.create(model="planner", messages=[{"role": "user", "content": "hi"}])
        samples.append((time.perf_counter() - started - (server.time_inside_s - inside)) * 1000)
    await client.close()
    return statistics.median(samples)


async def runtime_turns(agent: Agent, server: FakeOpenAI, turns: int, rng: random.Random) -> list[float]:
    samples = []
    for i in range(turns + 5):
        server.enqueue(text="Noted, " + " ".join(rng.choices(WORDS, k=10)))
        inbound = Inbound(platform="cli", chat_id="bench", user_id="ana",
                          text=f"what about the {rng.choice(WORDS)} and the {rng.choice(WORDS)}?")  # fmt: skip
        inside = server.time_inside_s
        started = time.perf_counter()
        async for event in agent.turn(inbound):
            if isinstance(event, Evaluated):
                elapsed = time.perf_counter() - started
        await agent.drain()  # after-reply work: not on the turn's path, not counted
        if i >= 5:  # the first turns pay one-off imports and cache warm-up
            samples.append((elapsed - (server.time_inside_s - inside)) * 1000)
    return samples


async def sandbox_round_trips(runs: int) -> dict[str, float]:
    spec = importlib.util.spec_from_file_location("sandbox_bench", ROOT / "bench" / "sandbox.py")
    sandbox_bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sandbox_bench)
    from runtime.sandbox import BACKENDS

    options = SandboxOptions()
    results = {"subprocess": await sandbox_bench.median_ms(sandbox_bench.plain_true, runs)}
    for status in await available_backends(options):
        if status.available:
            _, run_ms = await sandbox_bench.measure(BACKENDS[status.name], options, runs)
            results[status.name] = run_ms
    return results


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--memory", type=int, default=100_000)
    parser.add_argument("--history", type=int, default=1_000)
    args = parser.parse_args()
    rng = random.Random(3)
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as server:
        store = MemoryStore.open(Path(tmp) / "memory.db")
        # The toolbox and the skill slot as the daemon builds them (connectors/assembly.py).
        skills = SkillCatalog(SkillLibrary(Path(tmp) / "skills"), store)
        toolbox = builtin_toolbox(skills=skills)
        overhead = count_tokens(fixed_overhead_messages(), toolbox.schemas())
        # Providers render tool schemas their own way; as raw JSON text they cost at most this:
        as_json = count_tokens(fixed_overhead_messages()) + count_tokens(
            [{"role": "user", "content": toolbox.schema_json()}]
        )
        print(f"fixed_prompt_overhead_tokens: {overhead}")
        print(f"fixed_prompt_overhead_tokens_schemas_as_json: {as_json}")
        print(f"fixed_prompt_overhead_vs_hermes_reported: {overhead / HERMES_REPORTED_OVERHEAD_TOKENS:.3f}")
        fill_memory(store, args.memory, args.history, rng)
        print(f"memory_messages: {store.stats().messages}")
        baseline = await bare_openai_ms(server, 100)
        print(f"baseline_bare_openai_call_ms: {baseline:.2f}")
        for stream in (False, True):
            planner = ChatModel(ModelSettings("openai/planner", api_base=server.base_url, api_key="sk-bench",
                                              retry=RetryPolicy(max_retries=0)))  # fmt: skip
            workspaces = Workspaces(
                "local", SandboxOptions(), Path(tmp) / "snapshots", store.set_workspace_snapshot
            )
            agent = Agent(
                store, planner, toolbox, workspaces, settings=AgentSettings(stream=stream), skills=skills
            )
            samples = await runtime_turns(agent, server, args.turns, rng)
            await agent.close()
            name = "runtime_overhead_streaming" if stream else "runtime_overhead"
            print(f"{name}_p50_ms: {statistics.median(samples):.2f}")
            print(f"{name}_p99_ms: {percentile(samples, 0.99):.2f}")
            print(f"{name}_p50_vs_bare_openai_call: {statistics.median(samples) / baseline:.2f}")
        store.close()
    for backend, ms in (await sandbox_round_trips(30)).items():
        print(f"sandbox_round_trip_{backend}_ms: {ms:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
