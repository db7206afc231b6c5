"""runtime.executor's backends on a tiny model built here: exact ids and logprobs in process,
through a real `temper serve executor` server on 127.0.0.1, from a plain server (re-tokenised),
and from the planner standing in."""

from __future__ import annotations

import asyncio
import filecmp
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch

from runtime.executor import (
    Completion,
    ExecutorCallError,
    ExecutorRequestError,
    ExecutorServer,
    ExecutorTokenizer,
    LocalBackend,
    LocalModel,
    OpenAIBackend,
    PlannerBackend,
    SamplingParams,
    build_tiny_model,
)
from runtime.models import ChatModel, ModelSettings, RetryPolicy, close_model_clients
from tests.fakes import FakeOpenAI
from tests.fakes.tiny_model import build_tiny_adapter

pytestmark = pytest.mark.anyio  # the warning filters: pyproject.toml

MESSAGES = [
    {"role": "system", "content": "You run shell commands. Answer with one JSON action."},
    {"role": "user", "content": "Count the lines in data.csv."},
]
FEW = SamplingParams(max_tokens=8, seed=7)
GREEDY = SamplingParams(temperature=0.0, max_tokens=6)
TOLERANCE = 1e-4


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> None:
    torch.set_num_threads(1)  # 3-4x faster than two on these shared 2-core machines


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)


@pytest.fixture(scope="module")
def adapters(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("adapters")
    return {
        name: build_tiny_adapter(tiny_dir, root / name, seed=seed) for name, seed in (("v1", 1), ("v2", 2))
    }


@pytest.fixture
def model(tiny_dir: Path) -> LocalModel:
    """A fresh model per test, so that adapters loaded by one test never leak into another."""
    return LocalModel.load(tiny_dir)


def assert_exact(completion: Completion, recomputed: list[float]) -> None:
    assert len(completion.completion_ids) == len(completion.completion_logprobs) == len(recomputed) > 0
    worst = max(abs(a - b) for a, b in zip(completion.completion_logprobs, recomputed, strict=True))
    assert worst < TOLERANCE


# The tiny model ---------------------------------------------------------------------------------


def test_tiny_model_is_deterministic_by_seed_and_round_trips(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    first = build_tiny_model(tmp_path / "a", seed=3)
    again = build_tiny_model(tmp_path / "b", seed=3)
    other = build_tiny_model(tmp_path / "c", seed=4)

    files = sorted(path.name for path in first.iterdir())
    assert {"config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja"} <= set(files)
    assert all(filecmp.cmp(first / name, again / name, shallow=False) for name in files)
    assert not filecmp.cmp(first / "model.safetensors", other / "model.safetensors", shallow=False)
    assert filecmp.cmp(first / "tokenizer.json", other / "tokenizer.json", shallow=False)

    tokenizer = AutoTokenizer.from_pretrained(first)
    loaded = AutoModelForCausalLM.from_pretrained(first)
    assert len(tokenizer) == loaded.config.vocab_size == 2000
    action = (
        '{"analysis": "Count them.", "commands": [{"keystrokes": "wc -l data.csv\\n", '
        '"timeout": 5}], "task_complete": false}'
    )
    ids = tokenizer.encode(action, add_special_tokens=False)
    assert tokenizer.decode(ids) == action
    assert len(ids) < len(action) / 2.5  # trained on such text: it compresses well
    assert tokenizer.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True) == (
        "<|system|>\nYou run shell commands. Answer with one JSON action.<|end|>\n"
        "<|user|>\nCount the lines in data.csv.<|end|>\n<|assistant|>\n"
    )
    assert (
        loaded.generation_config.eos_token_id
        == tokenizer.eos_token_id
        == tokenizer.convert_tokens_to_ids("<|end|>")
    )


# LocalBackend -------------------------------------------------------------------------------------


async def test_local_completion_records_the_exact_tokens_and_their_logprobs(
    model: LocalModel,
) -> None:
    backend = LocalBackend(model)

    completion = await backend.complete(MESSAGES, FEW)

    assert completion.prompt_ids == model.tokenizer.encode_chat(MESSAGES)
    assert len(completion.completion_ids) == FEW.max_tokens and completion.finish_reason == "length"
    assert completion.text == model.tokenizer.decode(completion.completion_ids)
    assert_exact(completion, await backend.logprobs_of(completion.prompt_ids, completion.completion_ids))
    assert not completion.retokenized and completion.adapter_version is None
    assert completion.model == model.name and completion.sampling == FEW
    assert completion.tokenizer_hash == ExecutorTokenizer.load(model.name).hash
    assert completion.chat_template_hash is not None


async def test_logprobs_are_the_raw_model_distribution_whatever_the_temperature(
    model: LocalModel,
) -> None:
    backend = LocalBackend(model)

    hot = await backend.complete(MESSAGES, SamplingParams(temperature=1.7, top_p=0.9, max_tokens=6, seed=1))
    cold = await backend.complete(MESSAGES, SamplingParams(temperature=0.3, max_tokens=6, seed=1))

    for completion in (hot, cold):
        assert_exact(completion, await backend.logprobs_of(completion.prompt_ids, completion.completion_ids))


async def test_a_seed_makes_sampling_reproducible(model: LocalModel) -> None:
    backend = LocalBackend(model)

    first, again, other = [
        await backend.complete(MESSAGES, SamplingParams(max_tokens=8, seed=seed)) for seed in (5, 5, 6)
    ]

    assert (
        first.completion_ids == again.completion_ids
        and first.completion_logprobs == again.completion_logprobs
    )
    assert other.completion_ids != first.completion_ids


async def test_a_stop_token_ends_the_completion_and_is_recorded(model: LocalModel) -> None:
    backend = LocalBackend(model)
    favourite = (await backend.complete(MESSAGES, GREEDY)).completion_ids[0]
    model.stop_ids = frozenset({favourite})  # what the random model says first becomes its eos

    completion = await backend.complete(MESSAGES, GREEDY)

    assert completion.completion_ids == [favourite] and completion.finish_reason == "stop"
    assert len(completion.completion_logprobs) == 1


async def test_generation_runs_off_the_event_loop_one_at_a_time(model: LocalModel) -> None:
    backend = LocalBackend(model)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    ticker = asyncio.create_task(tick())
    sampling = SamplingParams(max_tokens=64, seed=3)
    first, second = await asyncio.gather(
        backend.complete(MESSAGES, sampling), backend.complete(MESSAGES, sampling)
    )
    ticker.cancel()

    assert ticks >= 5  # the loop kept running while the model worked
    assert first.completion_ids == second.completion_ids  # two at once did not disturb each other


async def test_requests_the_model_cannot_take_are_refused(model: LocalModel) -> None:
    backend = LocalBackend(model)

    with pytest.raises(ExecutorRequestError, match="no messages"):
        await backend.complete([], FEW)
    with pytest.raises(ExecutorRequestError, match="unknown role"):
        await backend.complete([{"role": "wizard", "content": "hi"}], FEW)
    with pytest.raises(ExecutorRequestError, match="lone surrogate"):
        await backend.complete([{"role": "user", "content": "echo \ud83d"}], FEW)
    with pytest.raises(ExecutorRequestError, match="context"):
        await backend.complete([{"role": "user", "content": "ls -la " * 2000}], FEW)
    with pytest.raises(ExecutorRequestError, match="top_p"):
        await backend.complete(MESSAGES, SamplingParams(top_p=0.0))
    with pytest.raises(ExecutorRequestError, match="outside the vocabulary"):
        await backend.logprobs_of([1, 2, 99_999], [3])


async def test_lora_adapters_load_swap_and_unload(model: LocalModel, adapters: dict[str, Path]) -> None:
    backend = LocalBackend(model)
    base = await backend.complete(MESSAGES, GREEDY)

    await backend.load_adapter("v1", adapters["v1"])
    one = await backend.complete(MESSAGES, GREEDY)
    await backend.load_adapter("v2", adapters["v2"])
    two = await backend.complete(MESSAGES, GREEDY)

    assert (
        (one.adapter_version, two.adapter_version)
        == ("v1", "v2")
        == (
            one.adapter_version,
            backend.adapter_version,
        )
    )
    assert len({tuple(c.completion_ids) for c in (base, one, two)}) == 3
    assert_exact(two, await backend.logprobs_of(two.prompt_ids, two.completion_ids))

    await backend.use_adapter("v1")  # a rollback is a swap to a version still loaded
    assert (await backend.complete(MESSAGES, GREEDY)).completion_ids == one.completion_ids

    await backend.unload_adapter("v1")
    assert backend.adapter_version is None
    assert (await backend.complete(MESSAGES, GREEDY)).completion_ids == base.completion_ids
    await backend.unload_adapter("v2")  # the last one: the base model as it was
    assert model.adapters == {}
    assert (await backend.complete(MESSAGES, GREEDY)).completion_logprobs == base.completion_logprobs
    with pytest.raises(ExecutorRequestError, match="no adapter 'v1'"):
        await backend.use_adapter("v1")


# temper serve executor, through OpenAIBackend ---------------------------------------------------


async def test_the_server_returns_exactly_what_it_sampled(model: LocalModel) -> None:
    local = await LocalBackend(model).complete(MESSAGES, FEW)

    async with (
        ExecutorServer(model, port=0) as server,
        OpenAIBackend(server.base_url, server.served_name) as remote,
    ):
        completion = await remote.complete(MESSAGES, FEW)

    assert not completion.retokenized
    assert completion.prompt_ids == local.prompt_ids  # the server's chat template, not ours
    assert completion.completion_ids == local.completion_ids  # same model, same seed
    assert completion.text == local.text
    assert_exact(completion, model.logprobs_of(completion.prompt_ids, completion.completion_ids))


async def test_the_server_answers_while_the_model_works(model: LocalModel) -> None:
    long = {"messages": MESSAGES, "max_tokens": 600, "seed": 1}
    async with (
        ExecutorServer(model, port=0) as server,
        httpx.AsyncClient(base_url=server.base_url) as client,
    ):
        started = time.perf_counter()
        working = asyncio.create_task(client.post("/chat/completions", json=long))
        await asyncio.sleep(0.05)  # the completion has started
        asked = time.perf_counter()
        models = await client.get("/models")
        models_s = time.perf_counter() - asked
        finished = await working
        completion_s = time.perf_counter() - started

    assert models.status_code == finished.status_code == 200
    assert models_s < completion_s / 3  # it did not wait for the model


async def test_completions_take_a_token_id_prompt(model: LocalModel) -> None:
    prompt = model.tokenizer.encode_text("$ ls -la /workspace\n")

    async with (
        ExecutorServer(model, port=0) as server,
        httpx.AsyncClient(base_url=server.base_url) as client,
    ):
        by_ids = (
            await client.post(
                "/completions",
                json={
                    "prompt": prompt,
                    "max_tokens": 5,
                    "seed": 1,
                    "logprobs": 2,
                    "return_token_ids": True,
                },
            )
        ).json()
        by_text = (
            await client.post(
                "/completions",
                json={
                    "prompt": "$ ls -la /workspace\n",
                    "max_tokens": 5,
                    "seed": 1,
                    "return_token_ids": True,
                },
            )
        ).json()

    choice = by_ids["choices"][0]
    assert choice["prompt_token_ids"] == prompt and len(choice["token_ids"]) == 5
    assert choice["text"] == model.tokenizer.decode(choice["token_ids"])
    recomputed = model.logprobs_of(prompt, choice["token_ids"])
    assert (
        max(abs(a - b) for a, b in zip(choice["logprobs"]["token_logprobs"], recomputed, strict=True))
        < TOLERANCE
    )
    assert all(len(top) == 2 for top in choice["logprobs"]["top_logprobs"])
    assert by_ids["usage"] == {
        "prompt_tokens": len(prompt),
        "completion_tokens": 5,
        "total_tokens": len(prompt) + 5,
    }
    assert by_text["choices"][0]["token_ids"] == choice["token_ids"]  # the same prompt, as text


async def test_adapters_load_and_unload_over_http(model: LocalModel, adapters: dict[str, Path]) -> None:
    async with (
        ExecutorServer(model, port=0, adapter_root=adapters["v1"].parent) as server,
        OpenAIBackend(server.base_url, server.served_name) as remote,
        httpx.AsyncClient(base_url=server.base_url) as client,
    ):
        base = await remote.complete(MESSAGES, FEW)
        await remote.load_adapter("v1", adapters["v1"])
        adapted = await remote.complete(MESSAGES, FEW)
        recomputed = model.logprobs_of(adapted.prompt_ids, adapted.completion_ids, adapter="v1")
        listed = (await client.get("/models")).json()
        await remote.unload_adapter("v1")
        after = await remote.complete(MESSAGES, FEW)
        unlisted = (await client.get("/models")).json()
        with pytest.raises(ExecutorRequestError, match="no adapter 'v1'"):
            await remote.use_adapter("v1")
        gone = await client.post("/chat/completions", json={"model": "v1", "messages": MESSAGES})

    assert [entry["id"] for entry in listed["data"]] == [server.served_name, "v1"]
    assert [entry["id"] for entry in unlisted["data"]] == [server.served_name]
    assert adapted.adapter_version == "v1" and adapted.completion_ids != base.completion_ids
    assert_exact(adapted, recomputed)
    assert after.adapter_version is None and after.completion_ids == base.completion_ids
    assert gone.status_code == 404 and "does not exist" in gone.json()["error"]["message"]


async def test_malformed_requests_get_4xx_and_the_server_keeps_serving(
    model: LocalModel, tmp_path: Path
) -> None:
    chat = {"messages": MESSAGES, "max_tokens": 2}
    bad: list[tuple[str, Any, int]] = [
        ("/chat/completions", b"{not json", 400),
        ("/chat/completions", b"\xff\xfe", 400),
        ("/chat/completions", b"[" * 100_000 + b"]" * 100_000, 400),
        ("/chat/completions", b"[1, 2]", 400),
        ("/chat/completions", {"messages": []}, 400),
        ("/chat/completions", {"messages": [{"content": "no role"}]}, 400),
        ("/chat/completions", {"messages": [{"role": "wizard", "content": "x"}]}, 400),
        ("/chat/completions", b'{"messages": [{"role": "user", "content": "\\ud83d"}]}', 400),
        ("/chat/completions", {**chat, "temperature": -1}, 400),
        ("/chat/completions", {**chat, "n": 2}, 400),
        ("/chat/completions", {**chat, "stream": True}, 400),
        ("/chat/completions", {**chat, "model": "gpt-17"}, 404),
        (
            "/chat/completions",
            {**chat, "messages": [{"role": "user", "content": "ls " * 3000}]},
            400,
        ),
        ("/completions", {"prompt": [1, 2, 10**9]}, 400),
        ("/completions", {"prompt": []}, 400),
        ("/completions", {"prompt": [1, "two"]}, 400),
        ("/load_lora_adapter", {"lora_name": "x", "lora_path": str(tmp_path / "nonexistent")}, 400),
        ("/load_lora_adapter", {"lora_name": "x", "lora_path": "v1\x00"}, 400),
        ("/unload_lora_adapter", {"lora_name": "never-loaded"}, 404),
        ("/nowhere", {}, 404),
    ]
    async with (
        ExecutorServer(model, port=0, adapter_root=tmp_path) as server,
        httpx.AsyncClient(base_url=server.base_url) as client,
    ):
        for path, body, status in bad:
            content = body if isinstance(body, bytes) else None
            response = await client.post(path, content=content, json=None if content else body)
            assert response.status_code == status, (path, body, response.text)
            assert response.json()["error"]["code"] == status
        assert (await client.get("/chat/completions")).status_code == 405
        fine = await client.post("/chat/completions", json=chat)

    assert fine.status_code == 200 and fine.json()["choices"][0]["finish_reason"] == "length"


async def test_an_api_key_guards_every_endpoint(model: LocalModel, tmp_path: Path) -> None:
    key = "s3cret-key-0123456789"
    chat = {"messages": MESSAGES, "max_tokens": 2}
    requests: list[tuple[str, str, Any]] = [
        ("GET", "/health", None),
        ("GET", "/v1/models", None),
        ("POST", "/v1/chat/completions", chat),
        ("POST", "/v1/completions", {"prompt": "ls", "max_tokens": 2}),
        ("POST", "/v1/load_lora_adapter", {"lora_name": "x", "lora_path": "x"}),
        ("POST", "/v1/unload_lora_adapter", {"lora_name": "x"}),
        ("GET", "/nowhere", None),
    ]
    wrong = [{}, {"Authorization": "Bearer wrong-key"}, {"Authorization": f"Basic {key}"}]
    async with (
        ExecutorServer(model, port=0, api_key=key, adapter_root=tmp_path) as server,
        httpx.AsyncClient(base_url=server.url) as client,
    ):
        refused = [
            await client.request(method, path, json=body, headers=headers)
            for method, path, body in requests
            for headers in wrong
        ]
        health = await client.get("/health", headers={"Authorization": f"Bearer {key}"})
        async with OpenAIBackend(server.base_url, server.served_name, api_key=key) as remote:
            completion = await remote.complete(MESSAGES, FEW)

    assert [answer.status_code for answer in refused] == [401] * len(refused)
    assert refused[0].headers["WWW-Authenticate"] == "Bearer"
    assert "Authorization: Bearer <key>" in refused[0].json()["error"]["message"]
    assert health.status_code == 200
    assert len(completion.completion_ids) == FEW.max_tokens


async def test_adapters_load_only_from_the_adapter_root(
    model: LocalModel, tiny_dir: Path, adapters: dict[str, Path], tmp_path: Path
) -> None:
    root = tmp_path / "executor" / "versions"
    version = build_tiny_adapter(tiny_dir, root / "v3", seed=3)
    (root / "escape").symlink_to(adapters["v1"])  # a link inside the root to an adapter outside it
    outside = [
        "/etc",
        str(adapters["v1"]),
        "../../etc",
        f"{root}/../../{adapters['v1'].name}",
        "v3/../../../outside",
        "escape",
        str(root),
    ]
    async with (
        ExecutorServer(model, port=0, adapter_root=root) as server,
        ExecutorServer(model, port=0) as closed,
        httpx.AsyncClient() as client,
    ):

        async def load(url: str, name: str, path: str) -> httpx.Response:
            return await client.post(f"{url}/load_lora_adapter", json={"lora_name": name, "lora_path": path})

        refused = [await load(server.base_url, "x", path) for path in outside]
        by_name = await load(server.base_url, "v3", "v3")
        by_path = await load(server.base_url, "v3-again", str(version))
        without_root = await load(closed.base_url, "v3", str(version))

    for path, answer in zip(outside, refused, strict=True):
        assert answer.status_code == 403, (path, answer.text)
        message = answer.json()["error"]["message"]
        assert f"is outside {root.resolve()}" in message and "loads adapters only from there" in message
    assert by_name.status_code == 200 and by_path.status_code == 200, (by_name.text, by_path.text)
    assert model.adapters == {"v3": str(version.resolve()), "v3-again": str(version.resolve())}
    assert without_root.status_code == 403 and "loads no adapters" in without_root.text


# OpenAIBackend against servers that are not ours ------------------------------------------------


async def test_a_server_without_ids_is_retokenised_with_the_executor_tokenizer(
    tiny_dir: Path,
) -> None:
    tokenizer = ExecutorTokenizer.load(tiny_dir)
    text = '{"analysis": "Done.", "commands": [], "task_complete": true}'
    async with FakeOpenAI() as fake:
        fake.enqueue(text=text)
        fake.enqueue(text=text, finish_reason="length")
        async with OpenAIBackend(fake.base_url, "fake-model", tokenizer_dir=tiny_dir) as backend:
            stopped = await backend.complete(MESSAGES, FEW)
            cut = await backend.complete(MESSAGES, FEW)
        sent = fake.requests[0]

    assert sent["return_token_ids"] is True and sent["logprobs"] is True and sent["seed"] == FEW.seed
    assert stopped.retokenized and stopped.text == text
    assert stopped.prompt_ids == tokenizer.encode_chat(MESSAGES)
    assert stopped.completion_ids == tokenizer.encode_text(text) + [tokenizer.eos_id]
    assert cut.finish_reason == "length" and cut.completion_ids == tokenizer.encode_text(text)
    assert stopped.completion_logprobs == [] and stopped.tokenizer_hash == tokenizer.hash


async def test_without_a_tokenizer_a_plain_server_gives_text_only() -> None:
    async with FakeOpenAI() as fake:
        fake.enqueue(error=400, message="Unrecognized request argument supplied: return_token_ids")
        fake.enqueue(text="ls")
        fake.enqueue(text="pwd")
        async with OpenAIBackend(fake.base_url, "fake-model") as backend:
            first = await backend.complete(MESSAGES, FEW)
            second = await backend.complete(MESSAGES, replace(FEW, constrained=True))
        sent = fake.requests

    assert (first.text, second.text) == ("ls", "pwd")
    assert second.sampling == FEW  # a server samples unconstrained, and the record says so
    assert first.prompt_ids == first.completion_ids == [] and not first.retokenized
    assert ["return_token_ids" in body for body in sent] == [True, False, False]  # asked once


async def test_server_failures_become_executor_call_errors() -> None:
    async with FakeOpenAI() as fake:
        fake.enqueue(error=503, message="overloaded")
        fake.enqueue(error=401, message="bad key")
        async with OpenAIBackend(fake.base_url, "fake-model") as backend:
            with pytest.raises(ExecutorCallError, match="overloaded") as busy:
                await backend.complete(MESSAGES, FEW)
            with pytest.raises(ExecutorCallError, match="bad key") as refused:
                await backend.complete(MESSAGES, FEW)
        port = fake.port
    async with OpenAIBackend(f"http://127.0.0.1:{port}/v1", "fake-model", connect_timeout_s=2) as backend:
        with pytest.raises(ExecutorCallError, match="cannot reach") as down:
            await backend.complete(MESSAGES, FEW)

    assert (busy.value.status, busy.value.transient) == (503, True)
    assert (refused.value.status, refused.value.transient) == (401, False)
    assert down.value.transient


# PlannerBackend -----------------------------------------------------------------------------------


def planner(fake: FakeOpenAI) -> ChatModel:
    settings = ModelSettings(
        model="openai/planner-model",
        api_base=fake.base_url,
        api_key="sk-test-0123456789abcdef",
        retry=RetryPolicy(max_retries=0),
    )
    return ChatModel(settings)


async def test_the_planner_stands_in_as_executor(tiny_dir: Path) -> None:
    tokenizer = ExecutorTokenizer.load(tiny_dir)
    async with FakeOpenAI() as fake:
        fake.enqueue(text="ls -la")
        fake.enqueue(text="wc -l data.csv")
        fake.enqueue(error=400, message="no such model")
        text_only = PlannerBackend(planner(fake))
        with_tokenizer = PlannerBackend(planner(fake), tokenizer_dir=tiny_dir)
        plain = await text_only.complete(
            MESSAGES, SamplingParams(temperature=0.2, max_tokens=64, seed=3, constrained=True)
        )
        retokenized = await with_tokenizer.complete(MESSAGES, FEW)
        with pytest.raises(ExecutorCallError, match="no such model"):
            await text_only.complete(MESSAGES, FEW)
        sent = fake.requests[0]
        await close_model_clients()

    assert plain.text == "ls -la" and plain.model == "planner:openai/planner-model"
    assert (
        plain.prompt_ids == plain.completion_ids == plain.completion_logprobs == [] and not plain.retokenized
    )
    assert (sent["temperature"], sent["max_tokens"]) == (0.2, 64)
    assert plain.sampling == SamplingParams(temperature=0.2, top_p=1.0, max_tokens=64, seed=None)
    assert retokenized.retokenized and retokenized.completion_logprobs == []
    assert retokenized.prompt_ids == tokenizer.encode_chat(MESSAGES)
    assert retokenized.completion_ids == tokenizer.encode_text("wc -l data.csv") + [tokenizer.eos_id]
