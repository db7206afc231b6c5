"""Held-out success read by group (learner/evaluation.py)."""

from learner.evaluation import Evaluation
from learner.gate import HeldoutResult


def test_success_by_group_averages_each_groups_attempts_and_leaves_out_unknown_tasks() -> None:
    evaluation = Evaluation(
        [
            HeldoutResult("copy-1", 0, 1.0),
            HeldoutResult("copy-1", 1, 0.0),
            HeldoutResult("copy-2", 0, 1.0),
            HeldoutResult("append-1", 0, 0.0),
            HeldoutResult("append-1", 1, 0.5),  # a verifier's partial reward counts as given
            HeldoutResult("stray", 0, 1.0),  # in no group: not counted anywhere
        ]
    )
    by_family = evaluation.success_by(
        {"copy-1": "copy_into_dir", "copy-2": "copy_into_dir", "append-1": "uppercase_append"}
    )
    assert by_family == {"copy_into_dir": 2 / 3, "uppercase_append": 0.25}
    assert list(by_family) == ["copy_into_dir", "uppercase_append"]  # sorted by name
    assert Evaluation([]).success_by({"copy-1": "copy_into_dir"}) == {}
