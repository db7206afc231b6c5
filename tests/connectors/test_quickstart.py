"""`temper quickstart --quick`: a short run of the same closed loop the README's main command runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory import MemoryStore

pytestmark = pytest.mark.slow


def test_quickstart_runs_the_whole_loop_offline(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPER_")}
    env.update(TEMPER_CONFIG=str(config), XDG_CONFIG_HOME=str(tmp_path / "xdg"), HF_HUB_OFFLINE="1")
    where = tmp_path / "run"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "temper"), "quickstart", "--quick", "--seed", "1", "--guidance", "--dir", str(where)],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for line in (
        "test success, untrained",
        "warm start epoch 1",
        "validation success",
        "GRPO iteration 0",
        "test success (held-out families): untrained",
        "estimated time on this machine",
        "after 1 GRPO steps: validation success",
        "by family (warm start -> after GRPO): ",
        "candidate: the adapter after",
        "steps to +25 points: ",
        "gate:",
    ):
        assert line in out
    assert "cut the run short" not in out  # work-bounded: the quick plan runs whole
    [families] = [line for line in out.splitlines() if "by family (warm start -> after GRPO): " in line]
    for family in ("copy_into_dir", "count_words_append", "uppercase_append"):  # GRID_HELDOUT
        assert f" {family} " in families
    assert "after 2 GRPO steps: validation success" in out  # the last step is probed: it may be chosen
    assert (where / "quickstart.png").read_bytes().startswith(b"\x89PNG")
    # With --guidance, it ran after every GRPO step (learner/guidance.py): references imitated.
    logged = [json.loads(line) for line in (where / "metrics.jsonl").read_text().splitlines()]
    assert logged and all(isinstance(record.get("guided"), int) for record in logged)
    assert (where / "learner" / "reports" / "cycle-0001" / "progress.png").read_bytes().startswith(b"\x89PNG")
    with MemoryStore.open(where / "memory.db") as store:
        groups = store.db.execute(
            "select count(distinct group_id) from episodes where kind = 'executor' and group_id like 'grpo%'"
        ).fetchone()[0]
        assert groups > 0
        episode = store.db.execute(
            "select id from episodes where group_id like 'grpo0:%' limit 1"
        ).fetchone()[0]
        [call] = store.trajectories.calls(episode)
        assert call.completion_ids and len(call.completion_logprobs) == len(call.completion_ids)
        assert (
            store.db.execute(
                "select count(*) from episodes where group_id like 'gate-%' and reward is not null"
            ).fetchone()[0]
            > 0
        )

        def tasks_of(label: str) -> set[str]:
            rows = store.db.execute(
                "select distinct group_id from episodes where group_id like ?", (f"{label}%",)
            )
            return {group.split(":", 1)[1] for (group,) in rows}

        # The warm start's epoch is chosen on validation tasks; the gate measures on other tasks.
        validation, test = tasks_of("warm"), tasks_of("gate-current")
        assert validation and test and not validation & test
        assert tasks_of("untrained") == test
        # Probes replay both halves; GRPO's candidate is chosen on the validation half alone.
        assert tasks_of("probe1") == validation | test
    kept = json.loads((where / "selected" / "kept.json").read_text())
    assert [step for step, _success in kept["history"]] == [1, 2]
    assert f"candidate: the adapter after {kept['step']} of 2 GRPO steps" in out
