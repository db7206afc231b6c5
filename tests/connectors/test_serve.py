"""`temper serve executor` as a user runs it: a real process on an ephemeral port, guarded by an
API key from the environment, answered through OpenAIBackend, stopped by SIGINT; and its
refusals of bad options and of an open server on the network."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from connectors.cli import app
from runtime.executor import ExecutorCallError, OpenAIBackend, SamplingParams, build_tiny_model
from tests.fakes.tiny_model import build_tiny_adapter

MESSAGES = [{"role": "user", "content": "List the files."}]
KEY = "test-key-5b0d9c1e"


@pytest.fixture(autouse=True)
def own_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine's config, data dir and executor key stay out of the tests."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    for name in ("TEMPER_CONFIG", "TEMPER_SECRETS", "TEMPER_DATA_DIR", "TEMPER_EXECUTOR_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)


@pytest.fixture
def serving(tiny_dir: Path, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`temper serve executor` started with an adapter, on any free port, with its API key in the
    environment and the data dir in tmp_path; yields it and its URL."""
    adapter = build_tiny_adapter(tiny_dir, tmp_path / "v1", seed=1)
    command = [
        sys.executable,
        "-c",
        "from connectors.cli import app; app()",
        "serve",
        "executor",
        "--model",
        str(tiny_dir),
        "--port",
        "0",
        "--served-model-name",
        "tiny",
        "--lora",
        f"v1={adapter}",
        "--no-access-log",
    ]
    environ = {**os.environ, "TEMPER_EXECUTOR_API_KEY": KEY, "TEMPER_DATA_DIR": str(tmp_path / "data")}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # blocks until it serves (or dies: then it is empty)
        assert line.startswith("serving "), (
            line,
            process.stderr.read() if process.poll() is not None else "",
        )
        yield process, line.split(" on ")[1].split()[0]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.slow  # ~10 s: a model, two adapters, and a process that imports torch
def test_serve_executor_serves_until_interrupted(
    serving: tuple[subprocess.Popen[str], str], tiny_dir: Path, tmp_path: Path
) -> None:
    process, base_url = serving
    version = build_tiny_adapter(tiny_dir, tmp_path / "data" / "executor" / "versions" / "v2", seed=2)

    async def use() -> tuple[list[str], str | None, int, list[int]]:
        async with (
            OpenAIBackend(base_url, "tiny", api_key=KEY) as backend,
            httpx.AsyncClient(base_url=base_url) as anonymous,
        ):
            await backend.use_adapter(None)
            plain = await backend.complete(MESSAGES, SamplingParams(max_tokens=4, seed=1))
            await backend.load_adapter("v2", version)  # a version in the data dir: loaded
            with pytest.raises(ExecutorCallError) as outside:
                await backend.load_adapter("etc", "/etc")
            statuses = [
                (await anonymous.get("/models")).status_code,
                (await anonymous.post("/chat/completions", json={"messages": MESSAGES})).status_code,
                outside.value.status or 0,
            ]
            return await backend.served_models(), plain.adapter_version, len(plain.completion_ids), statuses

    names, adapter, produced, statuses = asyncio.run(use())
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)

    assert names == ["tiny", "v1", "v2"] and adapter is None and produced == 4
    assert statuses == [401, 401, 403]
    assert process.returncode == 0 and out.strip().endswith("stopped"), err
    assert "stopping" in err and KEY not in out + err


def test_serve_executor_refuses_what_it_cannot_serve(tmp_path: Path) -> None:
    runner = CliRunner()

    missing = runner.invoke(app, ["serve", "executor", "--model", str(tmp_path / "nope")])
    bad_lora = runner.invoke(app, ["serve", "executor", "--model", str(tmp_path), "--lora", "v1"])

    assert missing.exit_code == 2 and "not a directory" in missing.output
    assert bad_lora.exit_code == 2 and "NAME=PATH" in bad_lora.output


def test_serve_executor_says_why_a_directory_is_no_model(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["serve", "executor", "--model", str(tmp_path)])

    assert (
        result.exit_code == 1 and "holds no config.json, so it is not a Hugging Face model" in result.output
    )


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "bot.example.org"])
def test_serve_executor_refuses_the_network_without_an_api_key(host: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["serve", "executor", "--model", str(tmp_path), "--host", host])

    assert result.exit_code == 2
    assert f"refusing to serve {host} without an API key" in result.output
    assert "TEMPER_EXECUTOR_API_KEY" in result.output and "--insecure" in result.output


@pytest.mark.parametrize(
    ("host", "options", "environ"),
    [
        ("127.0.0.1", [], {}),
        ("::1", [], {}),
        ("localhost", [], {}),
        ("0.0.0.0", [], {"TEMPER_EXECUTOR_API_KEY": KEY}),
        ("0.0.0.0", ["--api-key", KEY], {}),
        ("0.0.0.0", ["--insecure"], {}),
    ],
)
def test_serve_executor_goes_on_with_loopback_a_key_or_insecure(
    host: str, options: list[str], environ: dict[str, str], tmp_path: Path
) -> None:
    command = ["serve", "executor", "--model", str(tmp_path), "--host", host, *options]
    result = CliRunner().invoke(app, command, env=environ)

    # it went on to load the model (which this empty directory is not)
    assert (
        result.exit_code == 1 and "holds no config.json, so it is not a Hugging Face model" in result.output
    )
    warned = "WARNING: --insecure: serving 0.0.0.0" in result.output
    assert warned == ("--insecure" in options)
