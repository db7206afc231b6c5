"""The synthetic families in curriculum order, and which of them are held out.

    FAMILIES, FAMILY_NAMES      every family, easy first
    DEFAULT_HELDOUT             the held-out families of the full suite
    GRID_FAMILIES, GRID_HELDOUT, GRID_VERIFIER_ONLY   the subset `temper quickstart` learns on

Difficulty: 1 = one short command (15-32 characters) of a common idiom; 2 = one command with a
flag or pattern to get right; 3 = a pipeline or a small awk program. Why the held-out families
are these: synthetic.py.
"""

from __future__ import annotations

from learner.tasks import synthetic_files as files
from learner.tasks import synthetic_text as text
from learner.tasks.synthetic_drafts import Family

# In curriculum order: easy first. The default held-out families are marked.
FAMILIES: tuple[Family, ...] = (
    Family("create_file", 1, files.create_file),
    Family("append_line", 1, files.append_line),
    Family("copy_file", 1, files.copy_file),
    Family("rename_file", 1, files.rename_file),
    Family("move_into_dir", 1, files.move_into_dir),
    Family("append_in_dir", 1, files.append_in_dir),
    Family("count_lines", 1, text.count_lines),
    Family("count_words", 1, text.count_words),
    Family("sort_lines", 1, text.sort_lines),
    Family("head_lines", 1, text.head_lines),
    Family("copy_into_dir", 1, files.copy_into_dir),  # held out: copy_file + move_into_dir
    Family("create_in_dir", 1, files.create_in_dir),  # held out: create_file + a directory
    Family("sort_append", 1, text.sort_append),
    Family("head_append", 1, text.head_append),
    Family("count_lines_append", 1, text.count_lines_append),
    Family(
        "count_words_append", 1, text.count_words_append
    ),  # a grid's missing cell: count_words + appending
    Family("uppercase", 2, text.uppercase),
    Family("uppercase_append", 2, text.uppercase_append),  # a grid's missing cell: uppercase + appending
    Family("lowercase", 2, text.lowercase),
    Family("lowercase_append", 2, text.lowercase_append),
    Family("grep_lines", 2, text.grep_lines),
    Family("dedupe_lines", 2, text.dedupe_lines),
    Family("extract_column", 2, text.extract_column),
    Family("replace_word", 2, text.replace_word),
    Family("find_file", 2, files.find_file),
    Family("count_matches", 2, text.count_matches),  # held out: grep_lines + count_lines
    Family("replace_to_file", 2, text.replace_to_file),  # held out: replace_word + redirection
    Family("sum_numbers", 3, text.sum_numbers),
    Family("count_unique", 3, text.count_unique),  # held out: dedupe_lines + count_lines
)
FAMILY_NAMES: tuple[str, ...] = tuple(family.name for family in FAMILIES)
DEFAULT_HELDOUT: frozenset[str] = frozenset(
    {
        "copy_into_dir", "create_in_dir", "count_matches", "replace_to_file", "count_unique",
        "uppercase_append", "count_words_append",
    }
)  # fmt: skip
# The grids `temper quickstart` learns on: families that cross an operation with a form of the
# command (copy or move x to a file or into a directory; sort, first lines, uppercase,
# lowercase, count lines or words x write or append). The held-out families are cells missing
# from a grid whose other cells are trained, so a model that learned the pieces can solve them;
# a model that memorised whole commands cannot. A tiny model trained from scratch gets some of
# them right.
GRID_FAMILIES: tuple[str, ...] = (
    "copy_file", "rename_file", "move_into_dir", "copy_into_dir",
    "sort_lines", "head_lines", "uppercase", "lowercase", "count_lines", "count_words",
    "sort_append", "head_append", "count_lines_append", "lowercase_append", "uppercase_append",
    "count_words_append",
)  # fmt: skip
GRID_HELDOUT: frozenset[str] = frozenset({"copy_into_dir", "uppercase_append", "count_words_append"})
# Training families of the grids whose reference solutions the quickstart's warm start does not
# see: GRPO learns them from their verifiers alone, as it learns the agent's own logged tasks.
# Each held-out append cell has one as its sibling, an instruction one word away
# (count_lines_append for count_words_append, lowercase_append for uppercase_append), whose
# operation and form the warm start imitates in other cells: what reinforcement learns there,
# imitation alone did not teach, and the held-out cells measure whether it carries over.
GRID_VERIFIER_ONLY: frozenset[str] = frozenset({"head_append", "count_lines_append", "lowercase_append"})
