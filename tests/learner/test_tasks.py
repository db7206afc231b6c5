"""learner.tasks: the task record, the synthetic suite, and running tasks in real sandboxes."""

from __future__ import annotations

from pathlib import Path

import pytest

from learner.tasks import (
    DEFAULT_HELDOUT,
    FAMILY_NAMES,
    GRID_FAMILIES,
    GRID_HELDOUT,
    GRID_VERIFIER_ONLY,
    Task,
    TaskError,
    prepare_workspace,
    reference_actions,
    run_attempt,
    run_reference,
    synthetic_suite,
    task_snapshot,
    verify,
)
from learner.tasks.synthetic_drafts import DIRS
from runtime.executor.actions import parse_action
from runtime.sandbox import BackendName, open_sandbox

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_suite_is_the_same_for_the_same_seed() -> None:
    assert synthetic_suite(3, 4) == synthetic_suite(3, 4)
    assert synthetic_suite(3, 4) != synthetic_suite(4, 4)
    first, second = synthetic_suite(3, 4), synthetic_suite(3, 4, families=["count_lines"])
    assert [t for t in first if t.family == "count_lines"] == second  # a family depends on its name only
    # Asking for more tasks keeps the first ones: the quickstart imitates a family's first 32
    # tasks and replays its first 64 for GRPO.
    fewer, more = synthetic_suite(3, 4), synthetic_suite(3, 9)
    for family in FAMILY_NAMES:
        assert [t for t in more if t.family == family][:4] == [t for t in fewer if t.family == family]


def test_families_form_a_curriculum_whose_easy_tasks_are_one_short_command() -> None:
    tasks = synthetic_suite(0, 5)
    assert len(FAMILY_NAMES) >= 10 and {t.family for t in tasks} == set(FAMILY_NAMES)
    assert [t.difficulty for t in tasks] == sorted(t.difficulty or 0 for t in tasks)
    assert {t.difficulty for t in tasks} == {1, 2, 3}
    for task in tasks:
        assert len(task.reference) == 1 and task.source == "synthetic"
        if task.difficulty == 1:
            assert len(task.reference[0]) <= 32, task.reference[0]
        named = [word.rstrip("/") for word in task.reference[0].split() if "." in word or word.endswith("/")]
        assert all(name in task.instruction for name in named), (task.instruction, task.reference)


def test_train_and_heldout_are_split_by_family() -> None:
    tasks = synthetic_suite(0, 3)
    train = {t.family for t in tasks if t.split == "train"}
    heldout = {t.family for t in tasks if t.split == "heldout"}
    assert heldout == DEFAULT_HELDOUT and not train & heldout and len(train) >= 10
    custom = synthetic_suite(0, 2, heldout_families={"count_words"})
    assert {t.family for t in custom if t.split == "heldout"} == {"count_words"}
    with pytest.raises(TaskError, match="unknown synthetic task families: count_stars"):
        synthetic_suite(0, 2, heldout_families={"count_stars"})


def test_hundreds_of_distinct_tasks() -> None:
    tasks = synthetic_suite(0, 30)
    assert len(tasks) == 30 * len(FAMILY_NAMES) >= 300
    assert len({t.id for t in tasks}) == len(tasks)
    assert len({(t.instruction, tuple(sorted(t.files.items()))) for t in tasks}) == len(tasks)


def test_quickstart_validation_and_test_halves_share_no_instruction_or_command() -> None:
    # The quickstart splits its held-out tasks every other one into validation and test.
    for seed in range(100):
        tasks = synthetic_suite(seed, 16, heldout_families=GRID_HELDOUT, families=GRID_FAMILIES)
        heldout = [t for t in tasks if t.split == "heldout"]
        validation, test = heldout[0::2], heldout[1::2]
        assert not {t.instruction for t in validation} & {t.instruction for t in test}, seed
        assert not {t.reference for t in validation} & {t.reference for t in test}, seed


async def test_every_reference_passes_and_every_empty_attempt_fails(isolating_backend: BackendName) -> None:
    for seed in (0, 1, 2, 3):
        for task in synthetic_suite(seed, 1):
            passed, output = await run_reference(task, isolating_backend)
            assert passed, f"{task.id}: {task.instruction}\n{output}"
            empty = await run_attempt(task, (), isolating_backend)
            assert not empty.passed, f"{task.id}: an empty attempt passes {task.verifier}"


async def test_a_wrong_attempt_fails(isolating_backend: BackendName) -> None:
    task = synthetic_suite(0, 1, families=["count_lines"])[0]
    wrong = await run_attempt(task, [task.reference[0].replace("wc -l", "wc -w")], isolating_backend)
    assert not wrong.passed and "verifier" in wrong.output


@pytest.mark.parametrize(
    "family",
    [
        "sort_append",
        "head_append",
        "count_lines_append",
        "count_words_append",
        "uppercase_append",
        "lowercase_append",
    ],
)
async def test_appending_must_keep_what_the_file_held(family: str, isolating_backend: BackendName) -> None:
    task = synthetic_suite(0, 1, families=[family])[0]
    assert " >> " in task.reference[0]
    overwrite = await run_attempt(task, [task.reference[0].replace(" >> ", " > ")], isolating_backend)
    assert not overwrite.passed


def test_grid_heldout_families_are_missing_cells_of_trained_grids() -> None:
    tasks = synthetic_suite(0, 1, heldout_families=GRID_HELDOUT, families=GRID_FAMILIES)
    train = {t.family: t.reference[0] for t in tasks if t.split == "train"}
    heldout = {t.family: t.reference[0] for t in tasks if t.split == "heldout"}
    assert set(heldout) == GRID_HELDOUT and GRID_HELDOUT <= set(GRID_FAMILIES)
    # Each held-out command is made of a trained operation and a trained form of the command.
    assert heldout["copy_into_dir"].split()[0] == train["copy_file"].split()[0] == "cp"
    assert train["move_into_dir"].endswith("/") and heldout["copy_into_dir"].endswith("/")
    assert heldout["uppercase_append"].startswith("tr a-z A-Z <") and train["uppercase"].startswith(
        "tr a-z A-Z <"
    )
    assert heldout["count_words_append"].startswith("wc -w <") and " >> " in train["sort_append"]
    # ... and the warm start imitates every cell these pieces come from.
    assert not GRID_VERIFIER_ONLY & {"copy_file", "move_into_dir", "uppercase", "count_words", "sort_append"}


def _shape(instruction: str) -> list[str]:
    """The instruction's words with file and directory names replaced by NAME."""
    return ["NAME" if w.endswith(".txt") or w in DIRS else w for w in instruction.rstrip(".").split()]


def _operation(command: str) -> list[str]:
    """The command's words before its first file name or redirection: `tr A-Z a-z`, `mv`."""
    words = command.split()
    return words[: next(i for i, w in enumerate(words) if w.endswith(".txt") or w.startswith("<"))]


def test_held_out_append_cells_have_verifier_only_siblings_whose_pieces_the_warm_start_imitates() -> None:
    task_of = {
        t.family: t for t in synthetic_suite(0, 1, heldout_families=GRID_HELDOUT, families=GRID_FAMILIES)
    }
    assert GRID_VERIFIER_ONLY <= set(GRID_FAMILIES) - GRID_HELDOUT  # training families, no references used
    imitated = {f: t.reference[0] for f, t in task_of.items() if f not in GRID_VERIFIER_ONLY | GRID_HELDOUT}
    # (held-out cell, its sibling learned by reinforcement alone, the imitated cell with the
    # sibling's operation, the imitated cell with the sibling's form of the command)
    grids = [
        ("count_words_append", "count_lines_append", "count_lines", "sort_append"),
        ("uppercase_append", "lowercase_append", "lowercase", "sort_append"),
    ]
    # (copy_into_dir's pieces, `cp` and "into the directory", are imitated: see the test above.)
    assert {cell for cell, *_ in grids} == GRID_HELDOUT - {"copy_into_dir"}
    assert {sibling for _, sibling, *_ in grids} == GRID_VERIFIER_ONLY - {"head_append"}
    for cell, sibling, operation, form in grids:
        # The sibling's instruction differs from the held-out cell's in one word: the operation.
        cell_words, sibling_words = _shape(task_of[cell].instruction), _shape(task_of[sibling].instruction)
        assert len(cell_words) == len(sibling_words), (cell, sibling)
        assert sum(a != b for a, b in zip(cell_words, sibling_words, strict=True)) == 1, (cell, sibling)
        assert sibling in GRID_VERIFIER_ONLY
        # The warm start imitates its pieces: the operation in one cell, the form in another.
        reference = task_of[sibling].reference[0]
        assert _operation(reference) == _operation(imitated[operation])
        assert " >> " in reference and " >> " in imitated[form]


async def test_reference_actions_are_executor_actions() -> None:
    for task in synthetic_suite(1, 1):
        texts = reference_actions(task)
        actions = [parse_action(text) for text in texts]
        assert [c.keystrokes for c in actions[0].commands] == list(task.reference)
        assert not actions[0].task_complete and actions[0].commands[0].timeout_s == task.timeout_s
        assert actions[-1].task_complete and actions[-1].commands == () and actions[-1].analysis
        assert len(actions) == 2


def test_long_references_are_split_into_actions_of_eight_commands() -> None:
    task = Task(
        "t", "f", "make ten files", {}, "test -f f9", reference=tuple(f"touch f{i}" for i in range(10))
    )
    actions = [parse_action(text) for text in reference_actions(task)]
    assert [len(a.commands) for a in actions] == [8, 2, 0]
    assert [a.task_complete for a in actions] == [False, False, True]


def test_no_actions_for_a_task_without_a_self_contained_reference() -> None:
    with pytest.raises(TaskError, match="no reference"):
        reference_actions(Task("t", "f", "x", {}, "true"))
    hidden = Task(
        "t",
        "f",
        "x",
        {},
        "true",
        reference=("bash solution/solve.sh",),
        reference_files={"solution/solve.sh": "true"},
    )
    with pytest.raises(TaskError, match="does not see"):
        reference_actions(hidden)


async def test_snapshots_are_content_addressed(tmp_path: Path) -> None:
    task = synthetic_suite(0, 2, families=["count_lines"])[0]
    twin = Task(**{**task.__dict__, "id": "another-id"})
    other = synthetic_suite(0, 2, families=["count_lines"])[1]
    first, second = await task_snapshot(task, tmp_path), await task_snapshot(twin, tmp_path)
    assert first == second and len(list(tmp_path.glob("*.tar"))) == 1
    assert (await task_snapshot(other, tmp_path)).id != first.id
    async with open_sandbox("local", workspace=first) as sandbox:
        assert not await verify(task, sandbox)
        await sandbox.run(task.reference[0], 10)
        assert await verify(task, sandbox)


async def test_prepare_workspace_writes_the_files() -> None:
    task = synthetic_suite(5, 1, families=["find_file"])[0]
    async with open_sandbox("local") as sandbox:
        await prepare_workspace(task, sandbox)
        for path, content in task.files.items():
            assert (await sandbox.read_file(path)).decode() == content


def test_no_word_is_part_of_another() -> None:
    # grep and sed match substrings: tasks are only right if words never contain each other.
    from learner.tasks.synthetic_drafts import WORDS

    assert not [(a, b) for a in WORDS for b in WORDS if a != b and a in b]
