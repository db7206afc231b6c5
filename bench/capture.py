"""Capture benchmark: what recording executor model calls at token level costs.

Prints one `name: value` line per figure:
- record_call time per call (ms, median and p95) for a realistic ten-call episode (a 400-token
  system prompt + query, 120 sampled tokens and a 200-token observation per turn, the chat
  messages with their text), and as a share of a model call's time: real calls of the tiny
  local model (runtime/executor/tiny.py) when it can be built, else a fixed FIXED_CALL_S,
  which the output says;
- bytes per token of the final sequence for that episode: token arrays alone (target <= 8),
  and whole rows on disk (pages of model_calls and its indexes: text, ids, logprobs, overhead);
  against a naive baseline in the same database, every call's full prompt, completion ids
  and logprobs as JSON text (ratio);
- write throughput (calls/s) and export rate to Parquet and JSON Lines (calls/s).

The tiny model's episode has shorter observations than the synthetic one, to fit its context.

    python bench/capture.py [--episodes 200] [--turns 10]
    python bench/capture.py --episodes 2 --turns 3      # the smallest run (tests/bench)
"""

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memory import MemoryStore, StoredCall, export_trajectories

TURNS = 10
SYSTEM_TOKENS, COMPLETION_TOKENS, OBSERVATION_TOKENS = 400, 120, 200
CHARS_PER_TOKEN = 4
# The tiny model's observations: 30 tokens by CHARS_PER_TOKEN are ~40 of its own (its tokenizer is
# trained on other text), so its ten turns end near 1,830 tokens of its 2,048. 60 were ~85 tokens,
# and the tenth prompt alone was 2,056 tokens: the model refused it.
TINY_OBSERVATION_TOKENS = 30
FIXED_CALL_S = 0.25  # a 120-token reply from a small model on one CPU core (~500 tokens/s)
WORDS = "ls cat grep file line total drwxr-xr-x root 4096 Nov src tests README.md error ok".split()


def words(rng: random.Random, tokens: int) -> str:
    text = []
    while sum(map(len, text)) + len(text) < tokens * CHARS_PER_TOKEN:
        text.append(rng.choice(WORDS))
    return " ".join(text)


def synthetic_episode(rng: random.Random, turns: int) -> list[StoredCall]:
    """`turns` calls, each prompt the previous prompt + completion + an observation."""
    prompt = [rng.randrange(150_000) for _ in range(SYSTEM_TOKENS)]
    messages = [
        {"role": "system", "content": words(rng, SYSTEM_TOKENS - 40)},
        {"role": "user", "content": words(rng, 40)},
    ]
    calls = []
    for turn in range(turns):
        sampled = [rng.randrange(150_000) for _ in range(COMPLETION_TOKENS)]
        text = words(rng, COMPLETION_TOKENS)
        calls.append(StoredCall(
            role="executor", model="Qwen/Qwen3-0.6B", prompt_ids=list(prompt), completion_ids=sampled,
            completion_logprobs=[-rng.random() * 3 for _ in sampled], finish_reason="stop", text=text,
            messages=list(messages), adapter_version="2026-11-02.1", tokenizer_hash="0123456789abcdef",
            chat_template_hash="fedcba9876543210", latency_s=0.4,
            sampling={"temperature": 0.7, "top_p": 1.0, "max_tokens": 512, "seed": turn},
        ))  # fmt: skip
        observation = [rng.randrange(150_000) for _ in range(OBSERVATION_TOKENS)]
        prompt = prompt + sampled + observation
        messages = messages + [
            {"role": "assistant", "content": text},
            {"role": "user", "content": words(rng, OBSERVATION_TOKENS)},
        ]
    return calls


def table_bytes(store: MemoryStore, *names: str) -> int:
    marks = ",".join("?" * len(names))
    return store.db.execute(
        f"select coalesce(sum(pgsize), 0) from dbstat where name in ({marks})", names
    ).fetchone()[0]


def store_naive(store: MemoryStore, calls: list[StoredCall]) -> None:
    with store.transaction():
        for call in calls:
            store.db.execute(
                "insert into naive_calls values (?, ?, ?)",
                (
                    json.dumps(call.prompt_ids),
                    json.dumps(call.completion_ids),
                    json.dumps(call.completion_logprobs),
                ),
            )


def tiny_model_calls(directory: Path, turns: int) -> tuple[list[StoredCall], str]:
    """Real calls of the tiny local model in one episode, or [] and why not."""
    try:
        from runtime.executor.completion import SamplingParams
        from runtime.executor.local_backend import LocalBackend
        from runtime.executor.tiny import build_tiny_model
    except ImportError as error:
        return [], f"tiny model unavailable ({error})"

    async def run() -> list[StoredCall]:
        backend = await LocalBackend.load(build_tiny_model(directory / "tiny", seed=0))
        messages = [
            {"role": "system", "content": "You run shell commands."},
            {"role": "user", "content": "count the files in src"},
        ]
        rng, calls = random.Random(1), []
        for turn in range(turns):
            completion = await backend.complete(
                messages, SamplingParams(temperature=1.0, max_tokens=COMPLETION_TOKENS, seed=turn)
            )
            calls.append(StoredCall(
                role="executor", model=completion.model, prompt_ids=completion.prompt_ids,
                completion_ids=completion.completion_ids, completion_logprobs=completion.completion_logprobs,
                finish_reason=completion.finish_reason, text=completion.text, messages=list(messages),
                adapter_version=completion.adapter_version, retokenized=completion.retokenized,
                tokenizer_hash=completion.tokenizer_hash, chat_template_hash=completion.chat_template_hash,
                latency_s=completion.latency_s, sampling=completion.sampling.as_dict(),
            ))  # fmt: skip
            messages = messages + [
                {"role": "assistant", "content": completion.text},
                {"role": "user", "content": words(rng, TINY_OBSERVATION_TOKENS)},
            ]
        return calls

    return asyncio.run(run()), "tiny local model (runtime/executor/tiny.py, one CPU thread)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--turns", type=int, default=TURNS, help="model calls per episode")
    args = parser.parse_args()
    rng = random.Random(0)
    episodes = [synthetic_episode(rng, args.turns) for _ in range(min(args.episodes, 20))]
    episodes = [episodes[i % len(episodes)] for i in range(args.episodes)]

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        store = MemoryStore.open(directory / "capture.db")
        store.trajectories.set_secrets(["operator-api-key-0123456789"])
        timings = []
        started = time.perf_counter()
        for calls in episodes:
            episode_id = store.trajectories.start_executor_episode(
                "count the files in src",
                split="train",
                snapshot_id="sha256:" + "0" * 64,
                snapshot_bytes=40_960,
            )
            for call in calls:
                began = time.perf_counter()
                store.trajectories.record_call(episode_id, call)
                timings.append(time.perf_counter() - began)
        total = time.perf_counter() - started
        record_ms = statistics.median(timings) * 1000
        print(f"record_call median: {record_ms:.3f} ms")
        print(f"record_call p95: {sorted(timings)[int(0.95 * len(timings))] * 1000:.3f} ms")
        print(
            f"write throughput: {len(timings) / total:,.0f} calls/s ({args.episodes} episodes of {args.turns} calls)"
        )

        final = len(episodes[0][-1].prompt_ids) + len(episodes[0][-1].completion_ids)
        array_bytes = (
            store.db.execute(
                "select sum(length(prompt_suffix) + length(completion_ids) + length(completion_logprobs)) from model_calls"
            ).fetchone()[0]
            / args.episodes
        )
        row_bytes = (
            table_bytes(store, "model_calls", "model_calls_role", "sqlite_autoindex_model_calls_1")
            / args.episodes
        )
        store.db.execute(
            "create table naive_calls (prompt_ids text, completion_ids text, completion_logprobs text)"
        )
        naive_episodes = min(args.episodes, 50)
        for calls in episodes[:naive_episodes]:
            store_naive(store, calls)
        naive_bytes = table_bytes(store, "naive_calls") / naive_episodes
        print(f"final sequence: {final} tokens ({args.turns} calls)")
        print(f"bytes per token, token arrays: {array_bytes / final:.2f} (target <= 8)")
        print(f"bytes per token, whole rows on disk (text, indexes): {row_bytes / final:.2f}")
        print(f"bytes per token, naive JSON of every full prompt: {naive_bytes / final:.2f}")
        print(f"naive / token arrays: {naive_bytes / array_bytes:.1f}x")
        print(f"naive / whole rows: {naive_bytes / row_bytes:.1f}x")

        for fmt in ("parquet", "jsonl"):
            began = time.perf_counter()
            report = export_trajectories(store, directory / f"out.{fmt}", format=fmt)
            seconds = time.perf_counter() - began
            size = os.path.getsize(directory / f"out.{fmt}")
            print(
                f"export {fmt}: {report.calls / seconds:,.0f} calls/s ({report.calls} calls, {size / 2**20:.1f} MiB)"
            )

        real, source = tiny_model_calls(directory, args.turns)
        if real:
            call_s = statistics.mean(call.latency_s for call in real)
            episode_id = store.trajectories.start_executor_episode("count the files in src")
            real_timings = []
            for call in real:
                began = time.perf_counter()
                store.trajectories.record_call(episode_id, call)
                real_timings.append(time.perf_counter() - began)
            stored = store.trajectories.calls(episode_id)
            causes = [c.mismatch for c in stored[1:] if not c.extends_previous]
            print(
                f"tiny model call: {call_s * 1000:.1f} ms mean ({statistics.mean(len(c.completion_ids) for c in real):.0f} sampled tokens)"
            )
            print(f"record_call for tiny model calls: {statistics.median(real_timings) * 1000:.3f} ms")
            print(
                f"capture overhead share: {statistics.median(real_timings) / call_s:.2%} of a tiny model call"
            )
            print(
                f"tiny model prompts extending the previous call: {args.turns - 1 - len(causes)} of {args.turns - 1} (mismatches: {', '.join(sorted(set(filter(None, causes)))) or 'none'})"
            )
            tiny_bytes = store.db.execute(
                "select sum(length(prompt_suffix) + length(completion_ids) + length(completion_logprobs))"
                " from model_calls where episode_id = ?", (episode_id,),
            ).fetchone()[0]  # fmt: skip
            tiny_final = len(real[-1].prompt_ids) + len(real[-1].completion_ids)
            whole = sum(4 * (len(c.prompt_ids) + 2 * len(c.completion_ids)) for c in real)
            print(
                f"bytes per token, tiny model episode: {tiny_bytes / tiny_final:.2f} (every prompt whole: {whole / tiny_final:.2f})"
            )
        else:
            print(
                f"capture overhead share: {record_ms / 1000 / FIXED_CALL_S:.2%} of a fixed {FIXED_CALL_S * 1000:.0f} ms call ({source})"
            )
        store.close()


if __name__ == "__main__":
    main()
