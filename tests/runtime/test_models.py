"""runtime.models against a scripted OpenAI-compatible server on 127.0.0.1, through the real
litellm and openai clients (litellm is imported once per session, by the first test).

Tests that call a model run twice, once per route to the server: `openai/...` with an api_base
goes through the openai SDK directly (openai_compatible.py), `custom_openai/...` through litellm
(which calls the same server the same way)."""

from __future__ import annotations

import socket
import time
import traceback
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from pydantic import SecretStr

from connectors.config import ModelSlot
from runtime.models import (
    ChatModel,
    ModelAuthError,
    ModelError,
    ModelRateLimited,
    ModelReply,
    ModelResponseError,
    ModelSettings,
    ModelTimeout,
    ModelUnreachable,
    RetryPolicy,
    TextDelta,
    ToolCall,
    close_model_clients,
    count_tokens,
    model_from_slot,
)
from runtime.models.provider_errors import provider_errors, to_model_error
from tests.fakes import FakeOpenAI

pytestmark = pytest.mark.anyio  # the warning filters: pyproject.toml

KEY = "sk-test-0123456789abcdefWXYZ"
HELLO = [{"role": "user", "content": "hello"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "terminal_task",
            "description": "Do terminal work in the sandbox; returns what was run and found.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    }
]
FAST_RETRY = RetryPolicy(max_retries=3, base_delay_s=0.01, max_delay_s=0.05)


@pytest.fixture
async def server(server: FakeOpenAI) -> AsyncIterator[FakeOpenAI]:
    """conftest's fake server; the test's event loop then closes the clients made on it, as the
    agent's `close` does (left open, they are reported unclosed when the process exits)."""
    yield server
    await close_model_clients()


@pytest.fixture(params=["openai", "custom_openai"], ids=["direct", "litellm"])
def route(request: pytest.FixtureRequest) -> str:
    """The provider part of the model strings: which way the call goes (module docstring)."""
    return str(request.param)


def chat_model(server: FakeOpenAI, route: str, **changes: Any) -> ChatModel:
    settings = ModelSettings(
        model=f"{route}/a",
        api_base=server.base_url,
        api_key=KEY,
        api_key_env="PLANNER_KEY",
        temperature=0.2,
        max_tokens=256,
        timeout_s=5,
        connect_timeout_s=1,
        retry=FAST_RETRY,
    )
    return ChatModel(replace(settings, **changes))


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def assert_one_clean_line(error: BaseException) -> None:
    text = str(error)
    assert "\n" not in text and text.strip() == text and text
    rendered = "".join(traceback.format_exception(error))
    assert KEY not in rendered and KEY not in repr(error)
    assert error.__cause__ is None and error.__context__ is None


# Replies ------------------------------------------------------------------------------------


async def test_complete_returns_text_usage_and_sends_the_settings(server: FakeOpenAI, route: str) -> None:
    server.enqueue(text="Hi! How can I help?", prompt_tokens=12, completion_tokens=6)

    reply = await chat_model(server, route).complete(HELLO)

    assert reply.text == "Hi! How can I help?"
    assert reply.tool_calls == () and reply.finish_reason == "stop"
    assert reply.model == f"{route}/a"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (12, 6)
    assert reply.latency_s > 0
    sent = server.requests[0]
    assert sent["model"] == "a" and sent["messages"] == HELLO
    assert (sent["temperature"], sent["max_tokens"]) == (0.2, 256)
    assert "tools" not in sent and not sent.get("stream")
    assert server.request_headers[0]["authorization"] == f"Bearer {KEY}"


async def test_complete_returns_tool_calls_and_sends_the_tools(server: FakeOpenAI, route: str) -> None:
    server.enqueue(
        tool_calls=[
            {"name": "terminal_task", "arguments": {"query": "count the files"}},
            {"name": "terminal_task", "arguments": '{"query": "df -h"'},  # bad JSON, kept as is
        ]
    )

    reply = await chat_model(server, route).complete(HELLO, TOOLS)

    assert server.requests[0]["tools"] == TOOLS
    assert reply.finish_reason == "tool_calls" and reply.text == ""
    first, second = reply.tool_calls
    assert first.name == "terminal_task" and first.id
    assert first.parsed_arguments() == {"query": "count the files"}
    assert second.arguments == '{"query": "df -h"'
    assert reply.to_message()["tool_calls"][0] == first.to_message()


async def test_stream_yields_text_deltas_in_order_then_the_reply(server: FakeOpenAI, route: str) -> None:
    server.enqueue(text=["Hel", "lo, ", "wor", "ld!"])

    events = [event async for event in chat_model(server, route).stream(HELLO)]

    assert events[:-1] == [TextDelta("Hel"), TextDelta("lo, "), TextDelta("wor"), TextDelta("ld!")]
    reply = events[-1]
    assert isinstance(reply, ModelReply) and reply.text == "Hello, world!"
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["stream_options"] == {"include_usage": True}


async def test_stream_assembles_tool_calls_from_their_deltas(server: FakeOpenAI, route: str) -> None:
    server.enqueue(
        text="Let me look.",
        tool_calls=[
            {"name": "terminal_task", "arguments": {"query": "ls -la /srv"}},
            {"name": "remember", "arguments": {"fact": "likes tea"}},
        ],
    )

    events = [event async for event in chat_model(server, route).stream(HELLO, TOOLS)]

    reply = events[-1]
    assert isinstance(reply, ModelReply)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == reply.text
    assert reply.text == "Let me look." and reply.finish_reason == "tool_calls"
    assert [(c.name, c.parsed_arguments()) for c in reply.tool_calls] == [
        ("terminal_task", {"query": "ls -la /srv"}),
        ("remember", {"fact": "likes tea"}),
    ]
    assert all(isinstance(c, ToolCall) and c.id for c in reply.tool_calls)
    assert len({c.id for c in reply.tool_calls}) == 2


# Retries and fallbacks ----------------------------------------------------------------------


async def test_stream_is_retried_until_its_first_chunk(server: FakeOpenAI, route: str) -> None:
    server.enqueue(error=503)
    server.enqueue(text="second try")

    events = [event async for event in chat_model(server, route).stream(HELLO)]

    assert [request["stream"] for request in server.requests] == [True, True]
    reply = events[-1]
    assert isinstance(reply, ModelReply) and (reply.text, reply.model) == ("second try", f"{route}/a")


async def test_rate_limit_waits_for_retry_after_then_succeeds(server: FakeOpenAI, route: str) -> None:
    server.enqueue(error=429, retry_after=0.3)
    server.enqueue(text="made it")
    slow_backoff = RetryPolicy(max_retries=3, base_delay_s=10.0)  # so only Retry-After fits

    started = time.perf_counter()
    reply = await chat_model(server, route, retry=slow_backoff).complete(HELLO)
    waited = time.perf_counter() - started

    assert reply.text == "made it"
    assert len(server.requests) == 2
    assert 0.3 <= waited < 1.5


async def test_rate_limit_on_every_retry_raises_rate_limited(server: FakeOpenAI, route: str) -> None:
    for _ in range(3):
        server.enqueue(error=429, retry_after=0.01, message="Rate limit reached for requests")

    with pytest.raises(ModelRateLimited) as caught:
        await chat_model(server, route, retry=replace(FAST_RETRY, max_retries=2)).complete(HELLO)

    assert len(server.requests) == 3
    assert "429" in str(caught.value) and "Rate limit reached" in str(caught.value)
    assert_one_clean_line(caught.value)


async def test_server_errors_exhaust_retries_then_the_fallback_answers(
    server: FakeOpenAI, route: str
) -> None:
    for _ in range(4):
        server.enqueue(error=500, model="a")
    server.enqueue(text="fallback here", model="b")

    reply = await chat_model(server, route, fallbacks=(f"{route}/b",)).complete(HELLO)

    assert reply.model == f"{route}/b" and reply.text == "fallback here"
    assert [request["model"] for request in server.requests] == ["a"] * 4 + ["b"]


async def test_every_model_failing_raises_the_first_models_error(server: FakeOpenAI, route: str) -> None:
    server.enqueue(error=400, message="context length exceeded", model="a")
    server.enqueue(error=503, model="b")
    server.enqueue(error=503, model="b")

    model = chat_model(server, route, fallbacks=(f"{route}/b",), retry=replace(FAST_RETRY, max_retries=1))
    with pytest.raises(ModelResponseError) as caught:
        await model.complete(HELLO)

    assert caught.value.status == 400  # a client error is not repeated
    assert [request["model"] for request in server.requests] == ["a", "b", "b"]
    assert "context length exceeded" in str(caught.value) and f"then {route}/b: HTTP 503" in str(caught.value)
    assert_one_clean_line(caught.value)


async def test_use_switches_the_model_for_the_next_call(server: FakeOpenAI, route: str) -> None:
    model = chat_model(server, route)
    model.use(f"{route}/c")
    server.enqueue(text="c speaking", model="c")

    reply = await model.complete(HELLO)

    assert (model.model, reply.model, server.requests[0]["model"]) == (f"{route}/c", f"{route}/c", "c")
    with pytest.raises(ModelError, match="provider/name"):
        model.use("gpt 4")


# The direct route's clients -----------------------------------------------------------------


async def test_calls_to_one_server_share_one_kept_open_connection(server: FakeOpenAI) -> None:
    for _ in range(3):
        server.enqueue(text="ok")
    planner, judge = chat_model(server, "openai"), chat_model(server, "openai")

    await planner.complete(HELLO)
    await judge.complete(HELLO)
    await planner.complete(HELLO)

    assert (server.handled, server.connections) == (3, 1)


async def test_closed_clients_are_made_again_on_the_next_call(server: FakeOpenAI) -> None:
    server.enqueue(text="before")
    server.enqueue(text="after")
    model = chat_model(server, "openai")

    await model.complete(HELLO)
    await close_model_clients()
    reply = await model.complete(HELLO)

    assert reply.text == "after" and server.connections == 2


def test_a_stream_cut_by_the_http_library_is_a_lost_connection() -> None:
    settings = ModelSettings(model="openai/a", api_base="http://127.0.0.1:9/v1")
    for module in ("httpx", "httpx2"):
        library = pytest.importorskip(module)
        cut = library.RemoteProtocolError("peer closed connection without sending complete message body")

        error = to_model_error(cut, "openai/a", settings)

        assert isinstance(error, ModelUnreachable) and error.transient
        assert isinstance(cut, provider_errors())


# Failures explained -------------------------------------------------------------------------


async def test_an_unknown_provider_fails_over_without_a_request(server: FakeOpenAI, route: str) -> None:
    server.enqueue(text="known", model="b")

    reply = await chat_model(server, route, model="nosuch/a", fallbacks=(f"{route}/b",)).complete(HELLO)

    assert reply.model == f"{route}/b" and len(server.requests) == 1
    with pytest.raises(ModelError, match="litellm knows no provider 'nosuch'"):
        await chat_model(server, route, model="nosuch/a").complete(HELLO)
    assert len(server.requests) == 1


def test_missing_key_without_api_base_names_the_variable() -> None:
    slot = ModelSlot(model="openai/gpt-4o-mini", api_key_env="PLANNER_OPENAI_KEY")

    with pytest.raises(ModelAuthError) as caught:
        model_from_slot(slot, environ={})

    assert "set the environment variable PLANNER_OPENAI_KEY" in str(caught.value)
    assert_one_clean_line(caught.value)


async def test_slot_keys_come_from_the_slot_the_environment_or_a_placeholder(
    server: FakeOpenAI, route: str
) -> None:
    base = {"model": f"{route}/a", "api_base": server.base_url}
    slots = [
        (ModelSlot(**base, api_key=SecretStr(KEY)), {}),
        (ModelSlot(**base, api_key_env="MY_KEY"), {"MY_KEY": "sk-from-env-123456"}),
        (ModelSlot(**base, api_key_env="MY_KEY"), {}),  # a local server: no key needed
    ]
    for slot, environ in slots:
        server.enqueue(text="ok")
        await model_from_slot(slot, environ).complete(HELLO)

    sent = [headers["authorization"] for headers in server.request_headers]
    assert sent == [f"Bearer {KEY}", "Bearer sk-from-env-123456", "Bearer not-needed"]


async def test_refused_key_is_an_auth_error_naming_the_variable(server: FakeOpenAI, route: str) -> None:
    server.enqueue(error=401, message=f"Incorrect API key provided: {KEY}")

    with pytest.raises(ModelAuthError) as caught:
        await chat_model(server, route).complete(HELLO)

    assert "refused the API key" in str(caught.value) and "PLANNER_KEY" in str(caught.value)
    assert len(server.requests) == 1  # not retried
    assert_one_clean_line(caught.value)


async def test_the_key_never_appears_in_error_text(server: FakeOpenAI, route: str) -> None:
    server.enqueue(error=500, message=f"upstream said: Bearer {KEY}\nTraceback: ...")

    with pytest.raises(ModelResponseError) as caught:
        await chat_model(server, route, retry=replace(FAST_RETRY, max_retries=0)).complete(HELLO)

    assert "upstream said" in str(caught.value)
    assert_one_clean_line(caught.value)


async def test_a_closed_port_is_unreachable_at_once(route: str) -> None:
    api_base = f"http://127.0.0.1:{closed_port()}/v1"
    model = ChatModel(ModelSettings(model=f"{route}/a", api_base=api_base, api_key=KEY))

    started = time.perf_counter()
    with pytest.raises(ModelUnreachable) as caught:
        await model.complete(HELLO)

    assert time.perf_counter() - started < 2.0  # refused is not retried
    assert api_base in str(caught.value) and "connection refused" in str(caught.value)
    assert_one_clean_line(caught.value)
    await close_model_clients()


async def test_a_slow_server_times_out(server: FakeOpenAI, route: str) -> None:
    server.enqueue(text="too late", delay=1.0)
    model = chat_model(server, route, timeout_s=0.2, retry=replace(FAST_RETRY, max_retries=0))

    started = time.perf_counter()
    with pytest.raises(ModelTimeout, match=r"within 0\.2 s"):
        await model.complete(HELLO)

    assert time.perf_counter() - started < 0.9


# Token counting -----------------------------------------------------------------------------


def test_count_tokens_works_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    connect = socket.socket.connect

    def loopback_only(sock: socket.socket, address: Any) -> None:
        if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1"):
            raise OSError(f"this test is offline: no connection to {address[0]}")
        connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)
    system = [{"role": "system", "content": "You are temper, a helpful agent."}, *HELLO]

    bare = count_tokens(system, None, "openai/gpt-4o-mini")
    with_tools = count_tokens(system, TOOLS, "openai/gpt-4o-mini")

    assert 10 <= bare <= 40
    assert with_tools - bare >= 15
    for other in ("ollama/llama3.1:8b", "hosted_vllm/Qwen/Qwen3-8B", "anthropic/claude-sonnet-4"):
        assert 10 <= count_tokens(system, None, other) <= 40
