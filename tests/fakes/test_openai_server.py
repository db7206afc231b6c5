"""The fake OpenAI server itself: raw HTTP for its edges, the real openai client (sync and async)
for its replies."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from tests.fakes import FakeOpenAI

HELLO: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hello"}]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def post(server: FakeOpenAI, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        connection.request("POST", path, body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def client(server: FakeOpenAI) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-fake", max_retries=0)


def test_replies_come_in_order_and_requests_are_recorded(server: FakeOpenAI) -> None:
    server.enqueue(text="one")
    server.enqueue(tool_calls=[{"name": "terminal_task", "arguments": {"query": "ls"}}])

    first = client(server).chat.completions.create(model="m", messages=HELLO)
    second = client(server).chat.completions.create(model="m", messages=HELLO)

    assert first.choices[0].message.content == "one"
    assert first.usage is not None and first.usage.prompt_tokens > 0
    call = second.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert (call.function.name, json.loads(call.function.arguments)) == (  # type: ignore[union-attr]
        "terminal_task",
        {"query": "ls"},
    )
    assert second.choices[0].finish_reason == "tool_calls"
    assert [request["messages"] for request in server.requests] == [HELLO, HELLO]
    assert server.pending() == 0 and server.handled == 2 and server.time_inside_s > 0


def test_model_queues_answer_their_model_and_the_shared_queue_the_rest(server: FakeOpenAI) -> None:
    server.enqueue(text="shared")
    server.enqueue(text="for b", model="b")

    answers = [client(server).chat.completions.create(model=name, messages=HELLO) for name in ("b", "a")]

    assert [answer.choices[0].message.content for answer in answers] == ["for b", "shared"]


def test_streams_text_and_tool_call_deltas(server: FakeOpenAI) -> None:
    server.enqueue(text=["a", "b"], tool_calls=[{"name": "f", "arguments": {"x": 1}}])

    chunks = list(
        client(server).chat.completions.create(
            model="m",
            messages=HELLO,
            stream=True,
            stream_options={"include_usage": True},
        )
    )

    text = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    arguments = "".join(
        piece.function.arguments or ""  # type: ignore[union-attr]
        for c in chunks
        if c.choices
        for piece in c.choices[0].delta.tool_calls or []
    )
    assert text == ["a", "b"] and json.loads(arguments) == {"x": 1}
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_scripted_errors_carry_status_and_retry_after(server: FakeOpenAI) -> None:
    server.enqueue(error=429, retry_after=0.25, message="slow down")

    with pytest.raises(openai.RateLimitError) as caught:
        client(server).chat.completions.create(model="m", messages=HELLO)

    assert caught.value.response.headers["retry-after"] == "0.25"
    assert "slow down" in str(caught.value)


def test_an_empty_queue_fails_loudly(server: FakeOpenAI) -> None:
    status, body = post(
        server, "/v1/chat/completions", json.dumps({"model": "m", "messages": HELLO}).encode()
    )

    assert status == 400 and "no reply queued for model 'm'" in body["error"]["message"]
    assert server.unanswered == ["m"]


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/v1/chat/completions", b"{not json", 400),
        ("/v1/chat/completions", b'{"model": "m"}', 400),
        ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "x"}]}', 400),
        ("/v1/completions", b"{}", 404),
    ],
)
def test_malformed_requests_get_4xx_and_consume_nothing(
    server: FakeOpenAI, path: str, body: bytes, status: int
) -> None:
    server.enqueue(text="kept")

    assert post(server, path, body)[0] == status
    assert server.pending() == 1


def test_models_lists_the_scripted_models(server: FakeOpenAI) -> None:
    server.enqueue(text="x", model="qwen3:8b")

    listed = [model.id for model in client(server).models.list()]

    assert listed == ["fake-model", "qwen3:8b"]


@pytest.mark.anyio
async def test_async_with_serves_the_async_client() -> None:
    async with FakeOpenAI() as server:
        server.enqueue(text="async hello")
        async_client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        reply = await async_client.chat.completions.create(model="m", messages=HELLO)
        await async_client.close()

    assert reply.choices[0].message.content == "async hello"
