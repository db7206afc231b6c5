"""`ExecutorServer`: an OpenAI-compatible HTTP server over a `LocalModel` (`temper serve executor`).

    async with ExecutorServer(model, port=0) as server:      # port 0: any free port
        ...  # OpenAIBackend(server.base_url, server.served_name) talks to it

It speaks the subset of vLLM's API that temper relies on (server_wire.py has the formats):

    POST /v1/chat/completions      messages -> text, token ids, logprobs
    POST /v1/completions           prompt as text or token ids -> the same
    GET  /v1/models                the base model and each loaded adapter
    POST /v1/load_lora_adapter     {"lora_name", "lora_path"}: then `"model": lora_name` uses it
    POST /v1/unload_lora_adapter   {"lora_name"}
    GET  /health                   200 once serving

Invariants:
- It never falls over on input: a body that is not JSON, fails validation, asks for something
  unsupported, names an unknown model, or does not fit the context is answered 4xx with
  `{"error": {"message", "type", "code"}}` and the server goes on serving. (A bug answers 500,
  logged by aiohttp, and the server goes on serving too.)
- Model work runs in worker threads, one operation at a time (`LocalModel`'s lock), so the event
  loop keeps accepting and answering `/health` and `/v1/models` while a completion runs.
- Binds 127.0.0.1 unless told otherwise; with an `api_key`, every request (/health included)
  must carry `Authorization: Bearer <key>`, compared in constant time, or is answered 401.
- /v1/load_lora_adapter loads only from inside `adapter_root` (in temper, the executor's
  versions directory): the path, relative ones taken inside the root, is resolved (symlinks and
  `..`) before it is checked, a path outside is answered 403, and without a root every load is.
  Adapters named at start (`temper serve executor --lora`) are the operator's and not checked.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from aiohttp import web
from aiohttp.log import access_logger
from pydantic import BaseModel, ValidationError

from runtime.executor.errors import ExecutorLoadError, ExecutorRequestError
from runtime.executor.local_model import LocalModel
from runtime.executor.server_wire import (
    ChatRequest,
    CompletionRequest,
    LoadAdapterRequest,
    UnloadAdapterRequest,
    chat_body,
    completion_body,
    error_body,
    models_body,
    validation_message,
)

RequestModel = TypeVar("RequestModel", bound=BaseModel)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
MAX_BODY_BYTES = 16 << 20


class ExecutorServer:
    """See the module docstring. `served_name` is the base model's name on the wire (vLLM's
    `--served-model-name`; by default the model directory as given). `adapter_root` is the only
    directory /v1/load_lora_adapter loads from (None: it loads nothing)."""

    def __init__(
        self,
        model: LocalModel,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        served_name: str | None = None,
        api_key: str | None = None,
        adapter_root: str | Path | None = None,
        access_log: bool = False,
    ) -> None:
        self.model = model
        self.host = host
        self.served_name = served_name or model.name
        self._requested_port = port
        self._api_key = api_key or None
        self.adapter_root = None if adapter_root is None else Path(adapter_root).expanduser()
        self._access_log = access_log
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    # Lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("the executor server is already started")
        app = web.Application(middlewares=[self._guard], client_max_size=MAX_BODY_BYTES)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/load_lora_adapter", self._load_adapter)
        app.router.add_post("/v1/unload_lora_adapter", self._unload_adapter)
        app.router.add_get("/health", self._health)
        runner = web.AppRunner(app, access_log=access_logger if self._access_log else None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self._requested_port)
        try:
            await site.start()
        except OSError:
            await runner.cleanup()
            raise
        self._runner = runner
        self._port = runner.addresses[0][1]

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = self._port = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the executor server is not started")
        return self._port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as base_url."""
        return f"{self.url}/v1"

    # Handlers --------------------------------------------------------------------------------

    async def _chat(self, request: web.Request) -> web.Response:
        body = await _parse(request, ChatRequest)
        adapter = self._adapter_for(body.model)
        tokenizer = self.model.tokenizer

        def run() -> dict[str, Any]:
            prompt_ids = tokenizer.encode_chat(body.chat_messages())
            sampling = body.sampling(self.model.max_positions)
            top = (body.top_logprobs or 0) if body.logprobs else 0
            sampled = self.model.sample(prompt_ids, sampling, adapter=adapter, top_logprobs=top)
            return chat_body(body, body.model or self.served_name, prompt_ids, sampled, tokenizer)

        return web.json_response(await asyncio.to_thread(run))

    async def _completions(self, request: web.Request) -> web.Response:
        body = await _parse(request, CompletionRequest)
        adapter = self._adapter_for(body.model)
        tokenizer = self.model.tokenizer

        def run() -> dict[str, Any]:
            prompt = body.prompt
            prompt_ids = (
                tokenizer.encode_text(prompt, special_tokens=True) if isinstance(prompt, str) else prompt
            )
            sampling = body.sampling(self.model.max_positions)
            sampled = self.model.sample(
                prompt_ids, sampling, adapter=adapter, top_logprobs=body.logprobs or 0
            )
            return completion_body(body, body.model or self.served_name, prompt_ids, sampled, tokenizer)

        return web.json_response(await asyncio.to_thread(run))

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response(models_body(self.served_name, self.model.max_positions, self.model.adapters))

    async def _load_adapter(self, request: web.Request) -> web.Response:
        body = await _parse(request, LoadAdapterRequest)
        if body.lora_name == self.served_name:
            raise ExecutorRequestError(f"{body.lora_name!r} is the base model's name: choose another")
        path = self._allowed_adapter_path(body.lora_path)
        await asyncio.to_thread(self.model.load_adapter, body.lora_name, path)
        return web.Response(text=f"Success: LoRA adapter '{body.lora_name}' added successfully.")

    async def _unload_adapter(self, request: web.Request) -> web.Response:
        body = await _parse(request, UnloadAdapterRequest)
        await asyncio.to_thread(self.model.unload_adapter, body.lora_name)
        return web.Response(text=f"Success: LoRA adapter '{body.lora_name}' removed successfully.")

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    def _allowed_adapter_path(self, requested: str) -> Path:
        """`requested`, resolved, when it lies inside the adapter root; else a 403."""
        if self.adapter_root is None:
            raise ExecutorRequestError(
                "this server loads no adapters over HTTP (it was started without an adapter directory)",
                status=403,
            )
        root = self.adapter_root.resolve()
        try:
            path = (root / requested).resolve()  # an absolute `requested` replaces the root
        except (OSError, ValueError, RuntimeError) as exc:  # a NUL byte, a symlink loop
            raise ExecutorRequestError(f"lora_path {requested!r} is not a usable path: {exc}") from None
        if not path.is_relative_to(root) or path == root:
            raise ExecutorRequestError(
                f"lora_path {requested!r} is outside {root}: this server loads adapters only from "
                "there (the executor's versions directory)",
                status=403,
            )
        return path

    def _adapter_for(self, model: str | None) -> str | None:
        """The adapter a request's `model` names: None for the base model."""
        if model is None or model == self.served_name:
            return None
        if model in self.model.adapters:
            return model
        names = ", ".join([self.served_name, *self.model.adapters])
        raise ExecutorRequestError(f"The model `{model}` does not exist (served: {names}).", status=404)

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Authorisation, and every expected failure as a JSON error answer."""
        if self._api_key is not None and not _authorised(request, self._api_key):
            answer = _error(401, "missing or wrong API key: send 'Authorization: Bearer <key>'")
            answer.headers["WWW-Authenticate"] = "Bearer"
            return answer
        try:
            return await handler(request)
        except web.HTTPException as exc:  # aiohttp's own: no such path, wrong method, too large
            if exc.status < 400:
                raise
            return _error(exc.status, f"{exc.reason}: {request.method} {request.path}")
        except ExecutorRequestError as exc:
            return _error(exc.status, str(exc))
        except ExecutorLoadError as exc:
            return _error(400, str(exc))


def _authorised(request: web.Request, api_key: str) -> bool:
    scheme, _, key = request.headers.get("Authorization", "").partition(" ")
    # compare_digest even when the scheme is wrong, so the answer's timing says nothing
    matches = hmac.compare_digest(key.strip().encode(errors="surrogateescape"), api_key.encode())
    return scheme.lower() == "bearer" and matches


async def _parse(request: web.Request, model: type[RequestModel]) -> RequestModel:
    """The request body as `model`; `ExecutorRequestError` (400) when it is not."""
    raw = await request.read()
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested past the limit
        raise ExecutorRequestError(f"the request body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ExecutorRequestError("the request body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ExecutorRequestError(validation_message(exc.errors())) from None


def _error(status: int, message: str) -> web.Response:
    return web.json_response(error_body(status, message), status=status)
