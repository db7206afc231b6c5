"""`temper serve ...`: temper's own model servers.

  temper serve executor --model DIR [--host 127.0.0.1] [--port 8000] [--lora NAME=PATH ...]
                        [--adapter-root DIR] [--insecure]

serves a Hugging Face model directory (the executor, e.g. one made by `build_tiny_model`) as an
OpenAI-compatible server speaking the subset of vLLM's API that temper uses: token ids, logprobs
and runtime LoRA loading (runtime/executor/server.py). Point the executor slot at it like at vLLM.

Access: on a host other than loopback it refuses to start without an API key (the option, or
TEMPER_EXECUTOR_API_KEY, which keeps it out of the process list), unless `--insecure` says to,
which it repeats as a warning. /v1/load_lora_adapter loads only from the adapter root: by
default the executor's versions directory under the config's data dir, where promotions land.

Lifecycle: load the model, bind, print one line `serving MODEL as NAME on URL`, serve until
SIGINT or SIGTERM; the first signal stops accepting and lets requests in flight finish, a second
one exits at once. torch and friends are imported only when the command runs.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from connectors.cli.context import get_config

if TYPE_CHECKING:
    from runtime.executor import ExecutorServer

app = typer.Typer(help="Serve temper's models over HTTP.", no_args_is_help=True)
API_KEY_ENV = "TEMPER_EXECUTOR_API_KEY"  # where the key is read from, out of the process list


@app.command()
def executor(
    ctx: typer.Context,
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
        typer.Option(
            envvar=API_KEY_ENV,
            show_envvar=False,  # said in the help, with why
            help=f"Require 'Authorization: Bearer <key>' on every request. Prefer setting {API_KEY_ENV}: "
            "an option shows in the process list. Needed on any host but loopback.",
        ),
    ] = None,
    insecure: Annotated[
        bool,
        typer.Option(
            "--insecure",
            help="Serve a host other than loopback without an API key: anyone who reaches the port "
            "can use the model.",
        ),
    ] = False,
    adapter_root: Annotated[
        Path | None,
        typer.Option(
            help="The only directory /v1/load_lora_adapter loads from "
            "(default: <data_dir>/executor/versions, where the learner promotes versions).",
        ),
    ] = None,
    access_log: Annotated[bool, typer.Option(help="Log each request to stderr.")] = True,
) -> None:
    """Serve an executor model as an OpenAI-compatible server (vLLM's token-id subset)."""
    if not model.is_dir():
        typer.echo(f"temper serve executor: {model} is not a directory: give a model directory", err=True)
        raise typer.Exit(2)
    adapters = [_adapter_option(option) for option in lora or []]
    api_key = api_key or None
    _check_access(host, port, api_key, insecure)
    if adapter_root is None:
        from learner.versions import ExecutorVersions

        adapter_root = ExecutorVersions(get_config(ctx).data_dir).versions_dir
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
            adapter_root,
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
    adapter_root: Path,
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
        model,
        host=host,
        port=port,
        served_name=served_name,
        api_key=api_key,
        adapter_root=adapter_root,
        access_log=access_log,
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


def _check_access(host: str, port: int, api_key: str | None, insecure: bool) -> None:
    """Refuse an open server on a host other than loopback, unless `insecure`: then warn."""
    if api_key is not None or _is_loopback(host):
        return
    if not insecure:
        typer.echo(
            f"temper serve executor: refusing to serve {host} without an API key: anyone who "
            f"can reach port {port} could use the model. Set {API_KEY_ENV} to a long random key "
            f"(export {API_KEY_ENV}=$(openssl rand -hex 32)) and give clients the same key "
            f'([models.executor] api_key_env = "{API_KEY_ENV}"); or bind --host 127.0.0.1; '
            "or pass --insecure to serve it open anyway.",
            err=True,
        )
        raise typer.Exit(2)
    typer.echo(
        f"WARNING: --insecure: serving {host}:{port} with no API key. Anyone who can reach "
        "this port can run the model and swap its adapters.",
        err=True,
    )


def _is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only. A name other than localhost counts as
    exposed: it may resolve to anything."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
