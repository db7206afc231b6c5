"""`temper chat`: the real command against the fake OpenAI server on 127.0.0.1, a real SQLite
memory and the local sandbox. A few tests run `temper` in a subprocess (exit codes, stderr,
Ctrl-C as a real signal); the rest drive it in-process through typer's runner, with the
interactive chat scripted on stdin (not a terminal: no prompts, no colour)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from connectors.cli import app
from connectors.cli.chat import cli_user
from memory import MemoryStore
from tests.fakes.openai_server import FakeOpenAI

TEMPER = str(Path(sys.executable).with_name("temper"))
SECRET_READ = "cat ~/.ssh/temper_test_absent"  # the policy asks first; the sandbox's home has no such file
# A process started with SIGINT ignored (the tests run in a background job of a script, as a
# CI runner may start them) passes that on to its children, and Python then installs no
# KeyboardInterrupt handler: the chat would rightly ignore Ctrl-C. The Ctrl-C test starts the
# chat with SIGINT at its default, as a terminal would.
WITH_DEFAULT_SIGINT = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])",
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config in tmp_path (data inside it, the local sandbox), chosen by TEMPER_CONFIG; no keys."""
    for name in [n for n in os.environ if n.startswith("TEMPER_") or n == "OPENAI_API_KEY"]:
        monkeypatch.delenv(name)
    config = tmp_path / "config.toml"
    # The planner gets the one-command shell here (no executor sub-agent): one scripted reply
    # per tool call keeps these tests about the chat, not the executor.
    config.write_text(
        f'data_dir = "{tmp_path / "data"}"\n\n[sandbox]\nbackend = "local"\n\n[executor]\nenabled = false\n'
    )
    monkeypatch.setenv("TEMPER_CONFIG", str(config))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    return tmp_path


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def planner(server: FakeOpenAI, model: str = "openai/any") -> list[str]:
    return ["--model", model, "--api-base", server.base_url]


def invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(app, ["chat", *args], input=input)


def temper(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TEMPER, "chat", *args], capture_output=True, text=True, timeout=60, **kwargs)


def stored(home: Path) -> MemoryStore:
    return MemoryStore.open(home / "data" / "temper.db")


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- one message: `temper chat -m` ------------------------------------------------------------


def test_one_shot_prints_the_reply_and_shows_tools_on_stderr(home: Path, server: FakeOpenAI) -> None:
    server.enqueue(tool_calls=[{"name": "shell", "arguments": {"command": "echo made && ls -la"}}])
    server.enqueue(text=["Hello", " there!"])

    done = temper("-m", "hi", *planner(server))

    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello there!\n"  # the reply alone: tool lines go to stderr
    assert "→ shell: echo made && ls -la" in done.stderr and "← made" in done.stderr
    assert server.requests[0]["model"] == "any"
    assert server.requests[0]["messages"][-1] == {"role": "user", "content": "hi"}
    assert "judge off:" in done.stderr  # no key for the default judge: one note, turns still work


def test_a_missing_api_key_is_one_line_and_exit_2(home: Path) -> None:
    done = temper("-m", "hi")

    assert done.returncode == 2
    assert done.stdout == "" and "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert "OPENAI_API_KEY" in line


def test_an_executor_model_dir_without_a_model_is_one_line_and_exit_2(home: Path, server: FakeOpenAI) -> None:
    config = home / "config.toml"
    missing = home / "models" / "executor"
    config.write_text(
        config.read_text().replace("enabled = false\n", f'backend = "local"\nmodel_dir = "{missing}"\n')
    )

    result = invoke("-m", "hi", *planner(server))

    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)  # no other exception
    assert result.stderr.strip() == (
        f"temper: the executor model cannot be loaded: {missing} is not a directory: give a model directory"
    )
    assert server.handled == 0  # nothing was asked of the planner


def test_an_unreachable_model_is_one_line_and_exit_1(home: Path) -> None:
    base = f"http://127.0.0.1:{closed_port()}/v1"

    result = invoke("-m", "hi", "--model", "openai/any", "--api-base", base)

    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)  # no other exception
    failures = [line for line in result.stderr.splitlines() if line.startswith("✗")]
    assert len(failures) == 1 and base in failures[0]
    assert result.stdout == ""


def test_one_shot_without_a_terminal_declines_approvals_unless_yes(home: Path, server: FakeOpenAI) -> None:
    server.enqueue(tool_calls=[{"name": "shell", "arguments": {"command": SECRET_READ}}])
    server.enqueue(text="Could not read it.")

    declined = invoke("-m", "read my key", *planner(server))

    assert declined.exit_code == 0, declined.output
    assert (
        f"? approve: {SECRET_READ}" in declined.stderr and "declined (no terminal to ask" in declined.stderr
    )
    assert "operator declined" in server.requests[-1]["messages"][-1]["content"]

    server.enqueue(tool_calls=[{"name": "shell", "arguments": {"command": SECRET_READ}}])
    server.enqueue(text="No such file.")
    approved = invoke("-m", "read it anyway", "--yes", *planner(server))

    assert "allowed (--yes)" in approved.stderr
    assert "No such file" in server.requests[-1]["messages"][-1]["content"]  # it ran


def test_a_judged_turn_shows_its_score(home: Path, server: FakeOpenAI) -> None:
    config = home / "config.toml"
    judge = f'\n[models.judge]\nmodel = "openai/judge"\napi_base = "{server.base_url}"\n'
    config.write_text(config.read_text() + judge)
    server.enqueue(tool_calls=[{"name": "list_files", "arguments": {}}], model="any")
    server.enqueue(text="Nothing here yet.", model="any")
    server.enqueue(text='{"score": 0.75, "reason": "looked before answering"}', model="judge")

    result = invoke("-m", "what files are there?", *planner(server))

    assert result.exit_code == 0, result.output
    assert "· score 0.75 (judge): looked before answering" in result.stderr


# --- the interactive chat ------------------------------------------------------------------------


def test_interactive_turns_feedback_and_model_switch(home: Path, server: FakeOpenAI) -> None:
    server.enqueue(text="Hi!")
    server.enqueue(text="Second answer.")

    result = invoke(*planner(server), input="hi\n/good\n/model openai/other\nsecond\n/exit\n")

    assert result.exit_code == 0, result.output
    assert "Hi!\n" in result.stdout and "Second answer.\n" in result.stdout
    assert "rated good" in result.stdout and "planner: openai/other (was openai/any)" in result.stdout
    assert [r["model"] for r in server.requests] == ["any", "other"]
    with stored(home) as store:
        session_id = store.session_id("cli:default:")
        first = store.episodes.get(store.episodes.latest(session_id).id - 1)
        assert (first.task, first.reward, first.reward_source) == ("hi", 1.0, "user")
        assert f"episode {first.id} " in result.stdout
        assert store.user_for_identity("cli", cli_user()) is not None


def test_sessions_new_and_switching(home: Path, server: FakeOpenAI) -> None:
    server.enqueue(text="one")
    server.enqueue(text="two")

    script = "first words\n/new\nfresh start\n/sessions\n/session work\n/bad\n"
    result = invoke(*planner(server), "--session", "work", input=script)

    assert result.exit_code == 0, result.output
    listing = [line for line in result.stdout.splitlines() if "messages" in line]
    assert len(listing) == 2
    assert listing[0].startswith("* ") and "fresh start" in listing[0]  # newest first, current marked
    assert listing[1].startswith("  work ") and "first words" in listing[1]
    with stored(home) as store:
        work = store.episodes.latest(store.session_id("cli:work:"))
        assert (work.task, work.reward_source) == ("first words", "user")  # /bad after switching back


def test_an_approval_answered_no_on_stdin_declines(home: Path, server: FakeOpenAI) -> None:
    server.enqueue(tool_calls=[{"name": "shell", "arguments": {"command": SECRET_READ}}])
    server.enqueue(text="Declined, fine.")

    result = invoke(*planner(server), input="show my key\nn\n")

    assert result.exit_code == 0, result.output
    assert "✗ declined" in result.stdout and "Declined, fine." in result.stdout
    assert "operator declined" in server.requests[-1]["messages"][-1]["content"]


def test_multi_line_messages_and_unknown_commands(home: Path, server: FakeOpenAI) -> None:
    server.enqueue(text="a")
    server.enqueue(text="b")

    script = '"""\nline one\n\nline three\n"""\ncontinued \\\nhere\n/nope\n/good\n'
    result = invoke(*planner(server), input=script)

    assert result.exit_code == 0, result.output
    sent = [r["messages"][-1]["content"] for r in server.requests]
    assert sent == ["line one\n\nline three", "continued \nhere"]
    assert "unknown command /nope" in result.stderr


def test_good_before_any_turn_says_so(home: Path, server: FakeOpenAI) -> None:
    result = invoke(*planner(server), input="/good\n/help\n")

    assert result.exit_code == 0
    assert "nothing to rate yet" in result.stderr and "/sessions" in result.stdout


def test_ctrl_c_cancels_the_turn_not_the_chat(home: Path, server: FakeOpenAI) -> None:
    server.enqueue(text="too late", delay=10)
    server.enqueue(text="Back again.")
    chat = subprocess.Popen(
        [*WITH_DEFAULT_SIGINT, TEMPER, "chat", *planner(server)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    chat.stdin.write("slow one\n")
    chat.stdin.flush()
    deadline = time.monotonic() + 30
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.02)
    chat.send_signal(signal.SIGINT)
    out, err = chat.communicate("next\n/exit\n", timeout=30)

    assert chat.returncode == 0, err
    assert "✗ cancelled" in err and "Traceback" not in err, (out, err)
    assert out == "Back again.\n"
    with stored(home) as store:
        session_id = store.session_id("cli:default:")
        latest = store.episodes.latest(session_id)
        assert store.episodes.get(latest.id - 1).status == "abandoned"
        assert latest.status == "succeeded"
