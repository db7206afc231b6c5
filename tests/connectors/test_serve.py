"""`temper serve executor` as a user runs it: a real process on an ephemeral port, answered through
OpenAIBackend, stopped by SIGINT; and its refusals of bad options."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from connectors.cli import app
from runtime.executor import OpenAIBackend, SamplingParams, build_tiny_model
from tests.fakes.tiny_model import build_tiny_adapter

MESSAGES = [{"role": "user", "content": "List the files."}]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)


@pytest.fixture
def serving(tiny_dir: Path, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`temper serve executor` started with an adapter, on any free port; yields it and its URL."""
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
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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


@pytest.mark.slow  # ~10 s: a model, an adapter, and a process that imports torch
def test_serve_executor_serves_until_interrupted(
    serving: tuple[subprocess.Popen[str], str],
) -> None:
    process, base_url = serving

    async def use() -> tuple[list[str], str | None, int]:
        async with OpenAIBackend(base_url, "tiny") as backend:
            models = httpx.get(f"{base_url}/models").json()  # noqa: ASYNC210 (the server is another process)
            await backend.use_adapter(None)
            plain = await backend.complete(MESSAGES, SamplingParams(max_tokens=4, seed=1))
            return (
                [entry["id"] for entry in models["data"]],
                plain.adapter_version,
                len(plain.completion_ids),
            )

    names, adapter, produced = asyncio.run(use())
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)

    assert names == ["tiny", "v1"] and adapter is None and produced == 4
    assert process.returncode == 0 and out.strip().endswith("stopped"), err
    assert "stopping" in err


def test_serve_executor_refuses_what_it_cannot_serve(tmp_path: Path) -> None:
    runner = CliRunner()

    missing = runner.invoke(app, ["serve", "executor", "--model", str(tmp_path / "nope")])
    bad_lora = runner.invoke(app, ["serve", "executor", "--model", str(tmp_path), "--lora", "v1"])

    assert missing.exit_code == 2 and "not a directory" in missing.output
    assert bad_lora.exit_code == 2 and "NAME=PATH" in bad_lora.output


def test_serve_executor_says_why_a_directory_is_no_model(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["serve", "executor", "--model", str(tmp_path)])

    assert result.exit_code == 1 and "cannot load a tokenizer" in result.output
