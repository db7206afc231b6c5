"""`temper doctor`: real config files, a fake OpenAI-compatible server and a fake Docker engine
on 127.0.0.1, and small fake `bwrap` executables on PATH."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from connectors.cli import app
from connectors.cli.doctor import EXTRAS, CheckResult, Status, exit_code

SECRET = "sk-live-0123456789abcdefWXYZ"
LINE = re.compile(r"^(ok|warn|fail)\s+(\S+): (.*)$")


@dataclass
class FakeServer:
    url: str
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)


@contextmanager
def serve(respond: Callable[[str], tuple[int, object]]) -> Iterator[FakeServer]:
    """An HTTP server on 127.0.0.1 answering GETs with ``respond(path)`` (JSON, or text)."""
    fake = FakeServer("")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fake.requests.append((self.path, dict(self.headers)))
            status, body = respond(self.path)
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Report:
    exit_code: int
    output: str
    lines: dict[str, tuple[str, str]]  # check name -> (status, detail)


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean environment: platform dirs in tmp_path, no TEMPER_* or API keys, no Docker engine."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{closed_port()}")
    for name in list(os.environ):
        if name.startswith("TEMPER_") or name in ("OPENAI_API_KEY", "MY_KEY"):
            monkeypatch.delenv(name)
    (tmp_path / "data").mkdir()
    return tmp_path


def doctor(machine: Path, config_text: str | None, env: dict[str, str] | None = None) -> Report:
    args = ["doctor"]
    if config_text is not None:
        config_file = machine / "config.toml"
        config_file.write_text(f'data_dir = "{machine / "data"}"\n{config_text}')
        args = ["--config", str(config_file), "doctor"]
    result = CliRunner().invoke(app, args, env=env)
    lines = {}
    for line in result.output.splitlines():
        if match := LINE.match(line):
            lines[match.group(2)] = (match.group(1), match.group(3))
    return Report(result.exit_code, result.output, lines)


def test_a_fresh_machine_is_told_to_run_init(machine: Path) -> None:
    report = doctor(machine, None)

    assert report.lines["config"][0] == "warn" and "run `temper init`" in report.lines["config"][1]
    assert report.lines["data_dir"] == (
        "fail",
        f"{machine / 'xdg-data' / 'temper'} does not exist (run `temper init`)",
    )
    assert report.exit_code == 1


def test_a_broken_config_fails_and_only_host_checks_run(machine: Path) -> None:
    report = doctor(machine, "[memroy]\n")

    status, detail = report.lines["config"]
    assert status == "fail" and "unknown key 'memroy' (did you mean 'memory'?)" in detail
    assert {"docker", "bwrap", "local", "extras"} <= report.lines.keys()
    assert "data_dir" not in report.lines
    assert report.exit_code == 1


def test_data_dir_and_database(machine: Path) -> None:
    report = doctor(machine, "")

    assert report.lines["config"] == ("ok", f"{machine / 'config.toml'} is valid")
    assert report.lines["data_dir"] == ("ok", f"{machine / 'data'} is writable")
    status, detail = report.lines["database"]
    assert status == "ok" and detail.startswith(f"{machine / 'data' / 'temper.db'} opens")
    assert report.exit_code == 0  # only warnings (no Docker engine, no API key) remain


def test_model_endpoint_answers_and_the_key_stays_masked(machine: Path) -> None:
    models = {"object": "list", "data": [{"id": "qwen3:8b", "object": "model"}]}
    with serve(lambda path: (200, models) if path == "/v1/models" else (404, {})) as server:
        report = doctor(
            machine,
            f'[models.planner]\nmodel = "ollama/qwen3:8b"\napi_base = "{server.url}/v1/"\n'
            'api_key_env = "MY_KEY"\n',
            env={"MY_KEY": SECRET},
        )

    assert report.lines["models.planner.api_base"] == ("ok", f"{server.url}/v1 answers")
    assert server.requests[0][1]["Authorization"] == f"Bearer {SECRET}"
    assert report.lines["models.planner.api_key"] == ("ok", "API key sk-…WXYZ")
    assert report.lines["models.{executor,judge}.api_key"][0] == "warn"
    assert SECRET not in report.output


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            200,
            {"data": [{"id": "llama3"}, {"id": "mistral"}]},
            "/v1 serves llama3, mistral, not 'qwen3:8b'",
        ),
        (401, {"error": "bad key"}, "/v1/models refused the API key (HTTP 401)"),
        (500, "boom", "/v1/models answered HTTP 500"),
    ],
)
def test_model_endpoint_problems_are_warnings(
    machine: Path, status: int, body: object, expected: str
) -> None:
    with serve(lambda path: (status, body)) as server:
        report = doctor(machine, f'[models.judge]\nmodel = "ollama/qwen3:8b"\napi_base = "{server.url}/v1"\n')

    assert report.lines["models.judge.api_base"] == ("warn", f"{server.url}{expected}")


def test_unreachable_model_endpoint_is_a_warning(machine: Path) -> None:
    port = closed_port()
    report = doctor(machine, f'[models.planner]\napi_base = "http://127.0.0.1:{port}/v1"\n')

    status, detail = report.lines["models.planner.api_base"]
    assert status == "warn" and detail.startswith(f"http://127.0.0.1:{port}/v1/models unreachable")


def test_no_endpoints_to_probe(machine: Path) -> None:
    report = doctor(machine, "")

    assert report.lines["models.{planner,executor,judge}.api_base"][0] == "ok"
    assert report.lines["models.{planner,executor,judge}.api_key"][0] == "warn"


def test_enabled_connector_needs_its_token(machine: Path) -> None:
    missing = doctor(machine, "[telegram]\nenabled = true\n")
    present = doctor(
        machine,
        "[telegram]\nenabled = true\n[slack]\nenabled = true\n",
        env={"TEMPER_TELEGRAM__BOT_TOKEN": SECRET, "TEMPER_SLACK__BOT_TOKEN": SECRET},
    )

    assert missing.lines["telegram"][0] == "fail"
    assert "telegram.bot_token not set" in missing.lines["telegram"][1]
    assert missing.exit_code == 1
    assert present.lines["telegram"] == ("ok", "enabled, bot_token sk-…WXYZ")
    assert present.lines["slack"][0] == "fail"
    assert "slack.app_token or signing_secret not set" in present.lines["slack"][1]
    assert SECRET not in missing.output + present.output


def fake_docker_engine(path: str) -> tuple[int, object]:
    if path.endswith("/version"):
        return 200, {"ApiVersion": "1.45", "MinAPIVersion": "1.24", "Version": "99.0-fake"}
    if path.endswith("/_ping"):
        return 200, "OK"
    if "/images/" in path and "temper-sandbox" in path:
        return 200, {"Id": "sha256:fake", "RepoTags": ["temper-sandbox:latest"]}
    return 404, {"message": "not here"}


def test_docker_engine_reachable(machine: Path) -> None:
    # The doctor reports the sandbox's own probe: the engine answers and the image is there.
    with serve(fake_docker_engine) as engine:
        report = doctor(
            machine,
            '[sandbox]\nbackend = "docker"\n',
            env={"DOCKER_HOST": engine.url.replace("http://", "tcp://")},
        )

    assert report.lines["docker"] == ("ok", "engine 99.0-fake, image temper-sandbox:latest")
    assert any(path.endswith("/_ping") for path, _ in engine.requests)


@pytest.mark.parametrize(("backend", "status"), [("auto", "warn"), ("docker", "fail")])
def test_docker_engine_missing(machine: Path, backend: str, status: str) -> None:
    report = doctor(machine, f'[sandbox]\nbackend = "{backend}"\n')

    assert report.lines["docker"][0] == status
    assert "not reachable" in report.lines["docker"][1]
    if status == "fail":
        assert report.exit_code == 1


def fake_bwrap(directory: Path, script: str) -> dict[str, str]:
    directory.mkdir()
    path = directory / "bwrap"
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return {"PATH": f"{directory}{os.pathsep}{os.environ['PATH']}"}


@pytest.mark.parametrize(("backend", "status"), [("auto", "warn"), ("bwrap", "fail")])
def test_bwrap_that_cannot_create_namespaces(machine: Path, backend: str, status: str) -> None:
    env = fake_bwrap(machine / "bin", 'echo "bwrap: No permissions to create new namespace" >&2; exit 1')

    report = doctor(machine, f'[sandbox]\nbackend = "{backend}"\n', env=env)

    assert report.lines["bwrap"][0] == status
    assert "bwrap cannot make a sandbox here" in report.lines["bwrap"][1]


def test_bwrap_missing(machine: Path) -> None:
    (machine / "empty").mkdir()

    report = doctor(machine, "", env={"PATH": str(machine / "empty")})

    assert report.lines["bwrap"][0] == "warn"
    assert "apt-get install bubblewrap" in report.lines["bwrap"][1]


def test_local_backend_is_said_loudly(machine: Path) -> None:
    chosen = doctor(machine, '[sandbox]\nbackend = "local"\n')
    default = doctor(machine, "")

    assert chosen.lines["local"][0] == "warn" and "WITHOUT isolation" in chosen.lines["local"][1]
    assert default.lines["local"][0] == "ok"


def test_extras_line_names_what_is_missing(machine: Path) -> None:
    missing = [module for module in EXTRAS if importlib.util.find_spec(module) is None]

    status, detail = doctor(machine, "").lines["extras"]

    assert status == ("warn" if missing else "ok")
    for module in missing:
        assert module in detail


def test_only_failures_make_a_non_zero_exit() -> None:
    ok = CheckResult("a", Status.OK, "fine")
    warn = CheckResult("b", Status.WARN, "hm")
    fail = CheckResult("c", Status.FAIL, "no")

    assert exit_code([ok, warn]) == 0
    assert exit_code([ok, warn, fail]) == 1


def test_a_database_that_does_not_open_fails(machine: Path) -> None:
    db_path = machine / "data" / "temper.db"
    db_path.write_bytes(b"this is not a database\n" * 200)

    report = doctor(machine, "")

    status, detail = report.lines["database"]
    assert status == "fail" and detail.startswith(f"{db_path}: ")
    assert report.exit_code == 1


def only_local(directory: Path) -> dict[str, str]:
    """A PATH with prlimit (all the local backend needs) and no bwrap."""
    directory.mkdir()
    prlimit = shutil.which("prlimit")
    assert prlimit is not None
    (directory / "prlimit").symlink_to(prlimit)
    return {"PATH": str(directory)}


@pytest.mark.parametrize(
    ("config", "consequence"),
    [("", "'auto' will refuse to run commands"), ('[sandbox]\nbackend = "local"\n', "WITHOUT isolation")],
)
def test_a_machine_where_only_local_works_is_warned(machine: Path, config: str, consequence: str) -> None:
    report = doctor(machine, config, env=only_local(machine / "bin"))

    status, detail = report.lines["sandbox"]
    assert status == "warn"
    assert detail.startswith("the strongest sandbox that works here is local")
    assert consequence in detail and "apt-get install bubblewrap" in detail


def test_the_strongest_working_sandbox_is_named(
    machine: Path, require_sandbox: Callable[[str], None]
) -> None:
    require_sandbox("bwrap")  # the real one: the machine has no Docker engine

    report = doctor(machine, "")

    assert report.lines["bwrap"][0] == "ok"
    assert report.lines["sandbox"] == ("ok", "strongest available: bwrap")
