"""python-telegram-bot's transport on aiohttp (connectors/telegram/request.py): form fields,
multipart files, and transport failures as python-telegram-bot's own errors. The Bot API calls
themselves run through it in every Telegram test (tests/connectors/test_telegram*.py)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from telegram import InputFile
from telegram.error import NetworkError, TimedOut
from telegram.request import RequestData
from telegram.request._requestparameter import RequestParameter

from connectors.telegram.request import AiohttpRequest

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def request_() -> AsyncIterator[AiohttpRequest]:
    transport = AiohttpRequest(read_timeout=0.3, connect_timeout=0.3)
    await transport.initialize()
    yield transport
    await transport.shutdown()


async def echo(request: web.Request) -> web.Response:
    form = await request.post()
    fields = {
        name: value
        if isinstance(value, str)
        else {"filename": value.filename, "content": value.file.read().decode()}
        for name, value in form.items()
    }
    return web.json_response({"ok": True, "result": fields, "type": request.content_type})


@pytest.fixture
async def echo_url() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/bot/echo", echo)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}/bot/echo"
    await runner.cleanup()


def data(**values: object) -> RequestData:
    return RequestData([RequestParameter.from_input(name, value) for name, value in values.items()])


async def test_parameters_go_as_form_fields(request_: AiohttpRequest, echo_url: str) -> None:
    status, body = await request_.do_request(
        echo_url, "POST", data(chat_id=7, text="hi there", reply_markup={"a": 1})
    )
    reply = json.loads(body)
    assert status == 200 and reply["type"] == "application/x-www-form-urlencoded"
    assert reply["result"] == {"chat_id": "7", "text": "hi there", "reply_markup": '{"a": 1}'}


async def test_files_go_as_multipart(request_: AiohttpRequest, echo_url: str) -> None:
    document = InputFile(b"file body", filename="notes.txt")
    status, body = await request_.do_request(echo_url, "POST", data(chat_id=7, document=document))
    reply = json.loads(body)
    assert status == 200 and reply["type"] == "multipart/form-data"
    assert reply["result"]["chat_id"] == "7"
    [part] = [v for v in reply["result"].values() if isinstance(v, dict)]
    assert part == {"filename": "notes.txt", "content": "file body"}


async def test_a_server_that_never_answers_is_a_timeout(request_: AiohttpRequest) -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(TimedOut):
            await request_.do_request(f"http://127.0.0.1:{port}/bot/getMe", "POST")
    finally:
        server.close()


async def test_a_refused_connection_is_a_network_error(request_: AiohttpRequest) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(NetworkError, match="aiohttp"):
        await request_.do_request(f"http://127.0.0.1:{port}/bot/getMe", "POST")


async def test_not_initialized_is_refused() -> None:
    with pytest.raises(RuntimeError, match="not initialized"):
        await AiohttpRequest().do_request("http://127.0.0.1:1/bot/getMe", "POST")
