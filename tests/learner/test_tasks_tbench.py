"""learner.tasks.tbench: terminal-bench 2 / Harbor task folders, imported and run without Docker."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from learner.tasks import TaskFormatError, check_task, import_tasks, load_task_dir, run_attempt

pytestmark = pytest.mark.anyio
FIXTURES = Path(__file__).parent.parent / "fixtures" / "tbench"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def write_task(root: Path, files: dict[str, str]) -> Path:
    for path, content in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(content)
    return root


async def test_an_imported_task_whose_reference_passes_and_whose_empty_solution_fails() -> None:
    task = load_task_dir(FIXTURES / "count-fruits")
    assert (task.id, task.family, task.difficulty, task.split) == (
        "count-fruits",
        "file-operations",
        1,
        "heldout",
    )
    assert (task.timeout_s, task.verifier_timeout_s, task.tags) == (60.0, 30.0, ("counting", "wc"))
    assert task.source == "tbench:count-fruits" and task.instruction.startswith("# Count the fruits")
    assert dict(task.files) == {"fruits.txt": "apple\nbanana\ncherry\n"}  # no Dockerfile, no tests/
    assert task.verifier == "bash tests/test.sh" and task.reference == ("bash solution/solve.sh",)
    assert task.docker_needs == ()
    check = await check_task(task)
    assert (check.reference_passed, check.empty_failed, check.sound) == (True, True, True)


async def test_a_task_whose_solution_is_wrong_is_unsound() -> None:
    check = await check_task(load_task_dir(FIXTURES / "wrong-solution"))
    assert (check.reference_passed, check.empty_failed, check.sound) == (False, True, False)
    assert "verifier bash tests/test.sh  [exit 1" in check.reference_output


async def test_tests_and_solution_stay_out_of_the_attempts_workspace() -> None:
    task = load_task_dir(FIXTURES / "count-fruits")
    looked = await run_attempt(task, ["ls -a"])
    listing = looked.output.split("\nverifier ")[0]
    assert "fruits.txt" in listing and "tests" not in listing and "solution" not in listing
    assert not looked.passed
    assert (await run_attempt(task, ["wc -l < fruits.txt > count.txt"])).passed


async def test_a_task_that_needs_its_image_says_why_and_is_not_run(tmp_path: Path) -> None:
    folder = write_task(tmp_path / "build-it", {
        "instruction.md": "Compile /app/main.c into /app/main.",
        "environment/Dockerfile": "FROM gcc:13\nWORKDIR /app\nRUN apt-get update && \\\n    apt-get install -y make\nCOPY main.c .\nCOPY cfg.ini /etc/cfg.ini\n",
        "environment/main.c": "int main(void) { return 0; }\n",
        "environment/cfg.ini": "x=1\n",
        "tests/test.sh": "pytest /tests/test_outputs.py && echo 1 > /logs/verifier/reward.txt\n",
    })  # fmt: skip
    task = load_task_dir(folder)
    assert task.needs_docker and not task.has_reference
    assert task.docker_needs == (
        "its Dockerfile runs `apt-get update && apt-get install -y make`",
        "its Dockerfile copies cfg.ini to /etc/cfg.ini, outside the workspace",
        "expects its tests at /tests",
        "writes its reward under /logs/verifier",
        "refers to /app, the image's working directory",
    )
    check = await check_task(task)
    assert check.sound is None and check.skipped.startswith("needs its own image: its Dockerfile runs")


def test_task_toml_is_read_leniently(tmp_path: Path) -> None:
    bare = load_task_dir(
        write_task(tmp_path / "bare", {"instruction.md": "Say hi.", "tests/test.sh": "true"})
    )
    assert (bare.family, bare.difficulty, bare.timeout_s, bare.reference, bare.files) == (
        "tbench",
        None,
        120.0,
        (),
        {},
    )
    odd = load_task_dir(write_task(tmp_path / "odd", {
        "instruction.md": "Say hi.", "tests/test.sh": "true",
        "task.toml": 'metadata = "not a table"\n[agent]\ntimeout_sec = "soon"\n[task]\nkeywords = ["a"]\n',
    }))  # fmt: skip
    assert (odd.family, odd.timeout_s, odd.tags) == ("tbench", 120.0, ("a",))
    hard = load_task_dir(write_task(tmp_path / "hard", {
        "instruction.md": "x", "tests/test.sh": "true", "task.toml": "[metadata]\ndifficulty = 3\n"
    }))  # fmt: skip
    assert hard.difficulty == 3


def test_import_reports_the_folders_that_are_not_tasks(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES, tmp_path / "set")
    write_task(tmp_path / "set" / "notes", {"README.md": "not a task"})
    write_task(tmp_path / "set" / "no-tests", {"instruction.md": "x"})
    write_task(
        tmp_path / "set" / "bad-toml",
        {"instruction.md": "x", "tests/test.sh": "true", "task.toml": "[metadata\n"},
    )
    write_task(tmp_path / "set" / ".git", {"HEAD": "ref"})
    (tmp_path / "set" / "README.md").write_text("a plain file is ignored")
    found = import_tasks(tmp_path / "set")
    assert [t.id for t in found.tasks] == ["count-fruits", "wrong-solution"]
    assert found.folders["count-fruits"] == tmp_path / "set" / "count-fruits"
    reasons = {s.path.name: s.reason for s in found.skipped}
    assert reasons.keys() == {"notes", "no-tests", "bad-toml"}
    assert reasons["notes"] == "no instruction.md: not a task folder"
    assert reasons["no-tests"].startswith("no tests/test.sh")
    assert reasons["bad-toml"].startswith("task.toml is not valid TOML")
    assert [t.id for t in import_tasks(FIXTURES / "count-fruits").tasks] == ["count-fruits"]
    with pytest.raises(TaskFormatError, match="not a directory"):
        import_tasks(tmp_path / "missing")


def test_an_environment_with_its_own_tests_folder_cannot_run_here(tmp_path: Path) -> None:
    folder = write_task(
        tmp_path / "t", {"instruction.md": "x", "tests/test.sh": "true", "environment/tests/unit.py": "pass"}
    )
    assert load_task_dir(folder).docker_needs == (
        "its environment has its own tests/, where the task's tests/ would be copied",
    )
