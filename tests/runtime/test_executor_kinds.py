"""runtime.executor.kinds: instructions grouped into kinds of tasks, stored in a real database;
checked on the learner's synthetic suite, whose families are known."""

from __future__ import annotations

from collections import Counter, defaultdict

from learner.tasks.synthetic import synthetic_suite
from memory import MemoryStore
from runtime.executor.kinds import TaskKinds, signature


def test_the_signature_masks_names_numbers_and_quoted_text() -> None:
    assert signature('Write the first 12 lines of /var/log/app.log to "out file".') == (
        "write the first <num> lines of <path> to <str>"
    )
    assert signature("grep 'TODO' in src/main.py and notes.md") == "grep <str> in <path> and <path>"


def test_instances_of_one_task_share_a_kind_and_other_tasks_do_not(tmp_path) -> None:
    with MemoryStore.open(tmp_path / "memory.db") as store:
        kinds = TaskKinds(store)
        copy = kinds.kind_of("Copy the file list.txt to names.txt.")
        assert copy == "copy the file <path> to <path>"
        assert kinds.kind_of("Copy the file books.txt to todo.txt.") == copy
        create = kinds.kind_of("Create the file data.txt containing the word ember.")
        assert kinds.kind_of("Create the file words.txt containing the word tulip.") == create != copy
        replace = kinds.kind_of("In the file tools.txt, replace every koala with fjord.")
        assert kinds.kind_of("In the file input.txt, replace every tulip with jelly.") == replace
        assert kinds.kind_of("Show the disk usage of each directory, largest first.") not in (
            copy,
            create,
            replace,
        )
        assert kinds.known()[:3] == [copy, create, replace]
    with MemoryStore.open(tmp_path / "memory.db") as store:  # another process: the same kinds
        assert TaskKinds(store).kind_of("Copy the file a.txt to b.txt.") == copy


def test_the_synthetic_families_map_onto_few_kinds_without_splitting() -> None:
    """30 families, 8 instances each, in curriculum order. Instances of a family land in one kind,
    except count_matches, between counting lines and picking lines (docs/executor.md); families
    that differ by one word (write/append, lines/words, upper/lower) share a kind."""
    with MemoryStore.open(":memory:") as store:
        kinds = TaskKinds(store)
        by_family: dict[str, Counter[str]] = defaultdict(Counter)
        for task in synthetic_suite(0, 8):
            by_family[task.family][kinds.kind_of(task.instruction)] += 1
        split = sorted(family for family, found in by_family.items() if len(found) > 1)
        assert split == ["count_matches"]
        assert len(kinds.known()) == 15
        kind_of_family = {family: found.most_common(1)[0][0] for family, found in by_family.items()}
        assert kind_of_family["copy_file"] == kind_of_family["rename_file"]  # copy vs move: one word
        assert kind_of_family["sort_lines"] == kind_of_family["sort_append"]
        assert kind_of_family["sort_lines"] != kind_of_family["count_lines"] != kind_of_family["copy_file"]
        assert len(set(kind_of_family.values())) == 15
