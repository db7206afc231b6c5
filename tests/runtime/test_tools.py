"""Tools against a real sandbox (local, and bwrap where it runs) and a real MemoryStore on a
temporary SQLite file: schemas, validation errors as data, path escapes, shell approvals,
output bounds."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import Field

from memory import MemoryStore, NewMessage
from runtime.sandbox import BackendStatus, Sandbox, SandboxOptions, open_sandbox
from runtime.tools import (
    ApprovalRequest,
    Toolbox,
    ToolContext,
    ToolResult,
    ToolSetupError,
    builtin_toolbox,
    tool,
)

pytestmark = pytest.mark.anyio

SCHEMA_JSON_BUDGET = 2_100  # characters; about 525 tokens (the profile tools took ~690 of them)


@pytest.fixture(params=["bwrap", "local"])
async def sandbox(
    request: pytest.FixtureRequest,
    sandbox_statuses: dict[str, BackendStatus],
    sandbox_options: SandboxOptions,
) -> AsyncIterator[Sandbox]:
    status = sandbox_statuses[request.param]
    if not status.available:
        pytest.skip(f"{status.name} sandbox unavailable: {status.detail}")
    async with open_sandbox(request.param, options=sandbox_options) as started:
        yield started


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[MemoryStore]:
    with MemoryStore.open(tmp_path / "memory.db") as store:
        yield store


class Operator:
    """An approver that answers from a script and remembers what it was asked."""

    def __init__(self, *answers: bool, remember: Literal["rule", "command"] | None = None) -> None:
        self.answers = list(answers)
        self.remember = remember
        self.asked: list[ApprovalRequest] = []
        self.context: ToolContext | None = None

    async def __call__(self, request: ApprovalRequest) -> bool:
        self.asked.append(request)
        approved = self.answers.pop(0)
        if approved and self.remember and self.context is not None:
            self.context.allow_for_session(request, whole_rule=self.remember == "rule")
        return approved


def context_for(
    sandbox: Sandbox | None = None,
    operator: Operator | None = None,
    allowed_commands: frozenset[str] = frozenset(),
) -> ToolContext:
    context = ToolContext(user="ana", sandbox=sandbox, session_id=1, allowed_commands=set(allowed_commands))
    if operator is not None:
        context.approve = operator
        operator.context = context
    return context


async def call(context: ToolContext, name: str, **arguments: object) -> ToolResult:
    return await builtin_toolbox().call(name, json.dumps(arguments), context)


# -- schemas --------------------------------------------------------------------------------


def test_builtin_schemas_are_function_schemas_without_noise() -> None:
    schemas = builtin_toolbox().schemas()
    assert [s["function"]["name"] for s in schemas] == [
        "search_memory",
        "remember",
        "forget_fact",
        "profile",
        "list_files",
        "read_file",
        "write_file",
        "shell",
    ]
    for schema in schemas:
        assert schema["type"] == "function"
        assert set(schema["function"]) == {"name", "description", "parameters"}
        assert "\n" not in schema["function"]["description"]
        assert schema["function"]["parameters"]["type"] == "object"
    text = builtin_toolbox().schema_json()
    assert '"title"' not in text and "additionalProperties" not in text and "anyOf" not in text


def test_builtin_schema_json_stays_small() -> None:
    text = builtin_toolbox().schema_json()
    print(f"tool schema JSON: {len(text)} characters, ~{len(text) // 4} tokens")
    assert len(text) <= SCHEMA_JSON_BUDGET


def test_a_typed_function_becomes_a_tool() -> None:
    def convert(
        context: ToolContext,
        amount: float,
        unit: Literal["km", "mi"] = "km",
        note: str | None = None,
        places: Annotated[int, Field(ge=0, le=6)] = 2,
    ) -> str:
        """Convert a distance.

        The rest of the docstring is for people, not the prompt.
        """
        return f"{amount:.{places}f} {unit}"

    made = tool(convert)
    assert made.context_parameter == "context"
    assert made.schema()["function"] == {
        "name": "convert",
        "description": "Convert a distance.",
        "parameters": {
            "properties": {
                "amount": {"type": "number"},
                "unit": {"default": "km", "enum": ["km", "mi"], "type": "string"},
                "note": {"default": None, "type": "string"},
                "places": {"default": 2, "maximum": 6, "minimum": 0, "type": "integer"},
            },
            "required": ["amount"],
            "type": "object",
        },
    }


def test_functions_that_cannot_be_described_are_refused_when_registered() -> None:
    def undocumented(x: int) -> str:
        return str(x)

    def variadic(*items: int) -> str:
        """Variadic."""
        return ""

    def untyped(x) -> str:  # type: ignore[no-untyped-def]
        """Untyped."""
        return ""

    for function in (undocumented, variadic, untyped):
        with pytest.raises(TypeError):
            tool(function)
    box = builtin_toolbox()
    with pytest.raises(ValueError, match="already"):
        box.add(box._tools["shell"].function)


# -- model mistakes come back as data ---------------------------------------------------------


async def test_unknown_tool_is_data() -> None:
    result = await builtin_toolbox().call("run_python", "{}", context_for())
    assert result.is_error
    assert result.text.startswith("Error: there is no tool named 'run_python'")
    assert "shell" in result.text


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("read_file", '{"path": "a.txt"', "not valid JSON"),
        ("read_file", '["a.txt"]', "must be a JSON object"),
        ("read_file", "{}", "path is missing"),
        ("read_file", '{"path": "a", "offset": "one"}', "offset: input should be a valid int"),
        ("read_file", '{"path": "a", "offset": 0}', "greater than or equal to 1"),
        ("shell", '{"command": "ls", "timeout_s": 100000}', "less than or equal to 600"),
        ("shell", '{"cmd": "ls"}', "cmd is not an argument"),
        ("search_memory", '{"query": "x", "limit": 0}', "limit"),
    ],
)
async def test_bad_arguments_are_data_that_say_what_is_expected(
    name: str, arguments: str, expected: str
) -> None:
    result = await builtin_toolbox().call(name, arguments, context_for())
    assert result.is_error and result.text.startswith("Error: ")
    assert expected in result.text
    assert f"{name}(" in result.text  # the expected signature


async def test_tool_setup_mistakes_are_bugs_and_raise() -> None:
    with pytest.raises(ToolSetupError):
        await builtin_toolbox().call("shell", '{"command": "ls"}', context_for())


async def test_output_is_bounded_keeping_head_and_tail(sandbox: Sandbox) -> None:
    box = builtin_toolbox(max_output_chars=300)
    result = await box.call("shell", '{"command": "seq 1 3000"}', context_for(sandbox))
    assert not result.is_error
    assert result.text.startswith("1\n2\n3\n")
    assert result.text.endswith("2999\n3000\n[exit 0]")
    assert "characters elided" in result.text
    assert len(result.text) < 300 + 60 and result.elided_chars > 0
    assert result.duration_s > 0


# -- files --------------------------------------------------------------------------------------


async def test_write_then_read_and_list(sandbox: Sandbox) -> None:
    context = context_for(sandbox)
    written = await call(context, "write_file", path="src/app/main.py", content="print('hi')\n")
    assert written.text == "Wrote 12 bytes to src/app/main.py."
    assert (await call(context, "read_file", path="src/app/main.py")).text == "print('hi')"
    absolute = f"{sandbox.workdir}/src/app/main.py"
    assert (await call(context, "read_file", path=absolute)).text == "print('hi')"
    await call(context, "write_file", path="node_modules/x/index.js", content="x")
    listing = (await call(context, "list_files")).text.splitlines()
    assert listing == ["node_modules/ (not expanded)", "src/", "src/app/", "src/app/main.py  12B"]
    assert (await call(context, "list_files", path="src")).text.splitlines()[0] == "src/app/"


async def test_read_file_pages_by_lines(sandbox: Sandbox) -> None:
    context = context_for(sandbox)
    numbers = "".join(f"{i}\n" for i in range(1, 101))
    await call(context, "write_file", path="n.txt", content=numbers)
    page = (await call(context, "read_file", path="n.txt", offset=10, limit=3)).text
    assert page == "10\n11\n12\n[lines 10-12 of 100; continue with offset=13]"
    last = (await call(context, "read_file", path="n.txt", offset=99)).text
    assert last == "99\n100\n[lines 99-100 of 100]"
    past = await call(context, "read_file", path="n.txt", offset=101)
    assert past.is_error and "100 lines" in past.text


async def test_read_file_reports_missing_binary_and_directories(sandbox: Sandbox) -> None:
    context = context_for(sandbox)
    missing = await call(context, "read_file", path="nope.txt")
    assert missing.is_error and "no file nope.txt" in missing.text
    await sandbox.write_file("blob.bin", b"\x00\x01\x02" * 10)
    binary = await call(context, "read_file", path="blob.bin")
    assert binary.is_error and "binary" in binary.text
    await sandbox.write_file("d/f.txt", "x")
    directory = await call(context, "read_file", path="d")
    assert directory.is_error and "list_files" in directory.text


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "a/../../x", "/", "..", "~/x/../../../etc"])
async def test_paths_outside_the_workspace_are_refused(sandbox: Sandbox, path: str) -> None:
    context = context_for(sandbox)
    for name, arguments in [
        ("read_file", {"path": path}),
        ("write_file", {"path": f"{path}/new", "content": "x"}),
        ("list_files", {"path": path}),
    ]:
        result = await call(context, name, **arguments)
        assert result.is_error, (name, path, result.text)
        assert "outside the workspace" in result.text or "leads outside" in result.text


async def test_symlinks_out_of_the_workspace_are_not_followed(sandbox: Sandbox) -> None:
    await sandbox.run("ln -s /etc etc_link && ln -s /etc/hostname host_link", timeout_s=10)
    context = context_for(sandbox)
    for name, arguments in [
        ("read_file", {"path": "etc_link/hostname"}),
        ("read_file", {"path": "host_link"}),
        ("write_file", {"path": "etc_link/temper_escape", "content": "x"}),
        ("write_file", {"path": "host_link", "content": "x"}),
        ("list_files", {"path": "etc_link"}),
    ]:
        result = await call(context, name, **arguments)
        assert result.is_error, (name, arguments, result.text)
        assert "symlink" in result.text
    assert not Path("/etc/temper_escape").exists()
    listing = (await call(context, "list_files")).text.splitlines()
    assert listing == ["etc_link -> /etc", "host_link -> /etc/hostname"]


# -- the shell and its approvals ------------------------------------------------------------


async def test_shell_reports_exit_codes_and_timeouts_as_output(sandbox: Sandbox) -> None:
    context = context_for(sandbox)
    ok = await call(context, "shell", command="echo hello")
    assert (ok.text, ok.is_error) == ("hello\n[exit 0]", False)
    failed = await call(context, "shell", command="echo oops >&2; exit 3")
    assert (failed.text, failed.is_error) == ("oops\n[exit 3]", False)
    quiet = await call(context, "shell", command="true")
    assert quiet.text == "[exit 0] (no output)"
    slow = await call(context, "shell", command="sleep 5", timeout_s=1)
    assert slow.text.startswith("[timed out after 1 s")


async def test_a_command_no_process_can_carry_is_an_error_not_a_crash(sandbox: Sandbox) -> None:
    # A tiny model's bytes, decoded leniently, once held a lone surrogate: the exec raised
    # UnicodeEncodeError and took the whole replay down with it.
    context = context_for(sandbox)
    surrogate = await call(context, "shell", command="echo caf\udcda > out.txt")
    assert surrogate.is_error and "not valid UTF-8 (at position 8)" in surrogate.text
    nul = await call(context, "shell", command="echo a\x00b")
    assert nul.is_error and "NUL character" in nul.text
    after = await call(context, "shell", command="ls; echo still here")
    assert after.text == "still here\n[exit 0]"  # nothing ran, and the sandbox goes on


async def test_a_command_never_runs_longer_than_the_ceiling(sandbox: Sandbox) -> None:
    context = context_for(sandbox)
    context.command_timeout_s = 1.5  # [sandbox] timeout_s
    started = time.monotonic()
    capped = await call(context, "shell", command="sleep 5", timeout_s=600)
    elapsed = time.monotonic() - started
    under = await call(context, "shell", command="echo fine", timeout_s=1)

    assert capped.text.startswith("[timed out after 1.5 s")
    assert "[timeout lowered from 600 s to 1.5 s, the per-command limit]" in capped.text
    assert elapsed < 4
    assert under.text == "fine\n[exit 0]"  # asking for less than the ceiling is fine, and silent


async def test_denied_commands_never_run_and_nobody_is_asked(sandbox: Sandbox) -> None:
    operator = Operator(True)
    context = context_for(sandbox, operator)
    result = await call(context, "shell", command="f(){ f|f& }; touch ran")
    assert result.is_error
    assert result.text.startswith("Error: refused by the command policy (fork-bomb)")
    assert operator.asked == []
    assert not (sandbox.workspace / "ran").exists()


async def test_an_approved_command_runs(sandbox: Sandbox) -> None:
    operator = Operator(True)
    context = context_for(sandbox, operator)
    result = await call(context, "shell", command="echo note >> ~/notes && cat ~/notes")
    assert result.text == "note\n[exit 0]"
    [request] = operator.asked
    assert (request.tool, request.rule) == ("shell", "write-outside")
    assert "~/notes" in request.reason


async def test_a_declined_command_does_not_run_and_the_model_is_told(sandbox: Sandbox) -> None:
    operator = Operator(False)
    context = context_for(sandbox, operator)
    result = await call(context, "shell", command="touch ran; echo x >> ~/.profile")
    assert result.is_error
    assert result.text.startswith("Error: the operator declined to run this command")
    assert "~/.profile" in result.text
    assert not (sandbox.workspace / "ran").exists()


async def test_without_an_approver_asking_means_declining(sandbox: Sandbox) -> None:
    result = await call(context_for(sandbox), "shell", command="echo x >> ~/.profile")
    assert result.is_error and "declined" in result.text


async def test_a_rule_allowed_for_the_session_is_not_asked_again(sandbox: Sandbox) -> None:
    operator = Operator(True, True, remember="rule")
    context = context_for(sandbox, operator)
    await call(context, "shell", command="echo a >> ~/one")
    assert context.allowed_rules == {"write-outside"}
    again = await call(context, "shell", command="echo b >> ~/two && cat ~/two")
    assert again.text == "b\n[exit 0]"
    assert len(operator.asked) == 1
    await call(context, "shell", command="cat ~/.netrc")  # another rule: asked again
    assert [r.rule for r in operator.asked] == ["write-outside", "read-credentials"]


async def test_a_command_allowed_for_the_session_is_not_asked_again(sandbox: Sandbox) -> None:
    operator = Operator(True, True, remember="command")
    context = context_for(sandbox, operator)
    command = "echo a >> ~/one"
    await call(context, "shell", command=command)
    await call(context, "shell", command=f"  {command} ")
    await call(context, "shell", command="echo a >> ~/two")  # same rule, other command
    assert [r.command for r in operator.asked] == [command, "echo a >> ~/two"]


async def test_session_patterns_allow_matching_commands(sandbox: Sandbox) -> None:
    operator = Operator()
    context = context_for(sandbox, operator, frozenset({"echo * >> ~/log"}))
    result = await call(context, "shell", command="echo started >> ~/log")
    assert result.text == "[exit 0] (no output)" and operator.asked == []


async def test_absolute_paths_into_the_workspace_do_not_ask(sandbox: Sandbox) -> None:
    operator = Operator()
    context = context_for(sandbox, operator)
    out = f"{sandbox.workdir}/out.txt"
    result = await call(context, "shell", command=f"echo x > {out} && rm -rf {out}")
    assert result.text == "[exit 0] (no output)" and operator.asked == []


# -- memory ---------------------------------------------------------------------------------


async def test_search_memory_is_scoped_to_the_user_and_dated(memory: MemoryStore) -> None:
    ts = datetime(2026, 10, 1, 12, tzinfo=UTC).timestamp()
    memory.add_messages(
        [
            NewMessage("s1", "ana", "user", "My sister moved to Lisbon for a job at the aquarium", ts),
            NewMessage("s2", "bo", "user", "My sister moved to Berlin last year", ts),
        ]
    )
    context = ToolContext(user="ana", memory=memory)
    question = '{"query": "where did my sister move?"}'
    result = await builtin_toolbox().call("search_memory", question, context)
    assert not result.is_error
    assert result.text.startswith("2026-10-01 user: ")
    assert "Lisbon" in result.text and "Berlin" not in result.text
    nothing = await builtin_toolbox().call("search_memory", '{"query": "kangaroo"}', context)
    assert nothing.text == "No past messages match 'kangaroo'."
    stranger = ToolContext(user="nobody-here", memory=memory)
    none = await builtin_toolbox().call("search_memory", '{"query": "sister"}', stranger)
    assert none.text.startswith("No past messages")


async def test_sync_tools_and_custom_toolboxes(memory: MemoryStore) -> None:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    box = Toolbox([add], max_output_chars=100)
    assert (await box.call("add", {"a": 2, "b": "3"}, ToolContext(user="ana"))).text == "5"
    assert (await box.call("add", None, ToolContext(user="ana"))).is_error
