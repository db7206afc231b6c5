"""`temper serve ...`: temper's own model servers.

  temper serve executor --model DIR [--host 127.0.0.1] [--port 8000] [--lora NAME=PATH ...]

serves a Hugging Face model directory (the executor, e.g. one made by `build_tiny_model`) as an
OpenAI-compatible server speaking the subset of vLLM's API that temper uses: token ids, logprobs
and runtime LoRA loading (runtime/executor/server.py). Point the executor slot at it like at vLLM.

Lifecycle: load the model, bind, print one line `serving MODEL as NAME on URL`, serve until
SIGINT or SIGTERM; the first signal stops accepting and lets requests in flight finish, a second
one exits at once. torch and friends are imported only when the command runs.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from runtime.executor import ExecutorServer

app = typer.Typer(help="Serve temper's models over HTTP.", no_args_is_help=True)


@app.command()
def executor(
    model: Annotated[
        Path, typer.Option("--model", help="Model directory (Hugging Face format, with tokenizer).")
    ],
    host: Annotated[
        str, typer.Option(help="Address to bind; 0.0.0.0 exposes it to the network.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port).", min=0, max=65535)] = 8000,
    served_model_name: Annotated[
        str | None, typer.Option(help="The model's name on the wire (default: --model as given).")
    ] = None,
    lora: Annotated[
        list[str] | None, typer.Option(help="Load a LoRA adapter at start: NAME=PATH (repeatable).")
    ] = None,
    device: Annotated[str, typer.Option(help="cpu, cuda or cuda:N.")] = "cpu",
    dtype: Annotated[str | None, typer.Option(help="Weights dtype (default float32).")] = None,
    threads: Annotated[int, typer.Option(help="torch threads on CPU.", min=1)] = 1,
    api_key: Annotated[
        str | None,
        typer.Option(envvar="TEMPER_EXECUTOR_API_KEY", help="Require this bearer key on /v1/ requests."),
    ] = None,
    access_log: Annotated[bool, typer.Option(help="Log each request to stderr.")] = True,
) -> None:
    """Serve an executor model as an OpenAI-compatible server (vLLM's token-id subset)."""
    if not model.is_dir():
        typer.echo(f"temper serve executor: {model} is not a directory: give a model directory", err=True)
        raise typer.Exit(2)
    adapters = [_adapter_option(option) for option in lora or []]
    if access_log:
        logging.basicConfig(level=logging.INFO, format="%(message)s")
    asyncio.run(
        _serve(
            model,
            adapters,
            host,
            port,
            served_model_name,
            device,
            dtype,
            threads,
            api_key,
            access_log,
        )
    )


async def _serve(
    directory: Path,
    adapters: list[tuple[str, Path]],
    host: str,
    port: int,
    served_name: str | None,
    device: str,
    dtype: str | None,
    threads: int,
    api_key: str | None,
    access_log: bool,
) -> None:
    from runtime.executor import ExecutorError, ExecutorServer, LocalModel

    try:
        model = await asyncio.to_thread(
            LocalModel.load, directory, device=device, dtype=dtype, threads=threads
        )
        for name, path in adapters:
            await asyncio.to_thread(model.load_adapter, name, path)
    except ExecutorError as error:
        typer.echo(f"temper serve executor: {error}", err=True)
        raise typer.Exit(1) from None
    server = ExecutorServer(
        model, host=host, port=port, served_name=served_name, api_key=api_key, access_log=access_log
    )
    try:
        await server.start()
    except OSError as error:
        typer.echo(
            f"temper serve executor: cannot listen on {host}:{port}: {error.strerror or error}",
            err=True,
        )
        raise typer.Exit(1) from None
    try:
        await _serve_until_signalled(server, [name for name, _ in adapters])
    finally:
        await server.close()
    typer.echo("stopped")


async def _serve_until_signalled(server: ExecutorServer, adapters: list[str]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if stop.is_set():
            typer.echo("forced exit", err=True)
            os._exit(130)  # a generation in a worker thread cannot be interrupted any other way
        typer.echo("stopping: finishing requests in flight (signal again to force)", err=True)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    loaded = f" (adapters: {', '.join(adapters)})" if adapters else ""
    typer.echo(f"serving {server.model.name} as {server.served_name} on {server.base_url}{loaded}")
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def _adapter_option(option: str) -> tuple[str, Path]:
    name, separator, path = option.partition("=")
    if not separator or not name or not path:
        raise typer.BadParameter(f"{option!r}: write NAME=PATH, like v3=/adapters/v3", param_hint="--lora")
    return name, Path(path)
