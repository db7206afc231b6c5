"""`temper learn --now`: one cycle for the configured local executor, leaving a report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.executor import build_tiny_model

pytestmark = pytest.mark.slow


def run(tmp_path: Path, config_text: str, *args: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n[sandbox]\nbackend = "local"\n{config_text}')
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPER_")}
    env.update(TEMPER_CONFIG=str(config), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    temper = str(Path(sys.executable).parent / "temper")
    return subprocess.run([temper, "learn", *args], capture_output=True, text=True, env=env, timeout=600)


def test_learn_needs_a_local_executor(tmp_path: Path) -> None:
    done = run(tmp_path, "", "--now")
    assert done.returncode == 2 and 'backend = "local"' in done.stderr and "Traceback" not in done.stderr


def test_learn_now_runs_a_cycle_and_reports(tmp_path: Path) -> None:
    model_dir = build_tiny_model(tmp_path / "tiny", seed=3)
    done = run(
        tmp_path,
        f'[executor]\nbackend = "local"\nmodel_dir = "{model_dir}"\n',
        "--now",
        "--iterations",
        "1",
        "--per-family",
        "2",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "iteration 0" in done.stdout
    reports = list((tmp_path / "data" / "learner" / "reports").glob("cycle-*/summary.txt"))
    assert reports and reports[0].read_text().strip()
    assert list((tmp_path / "data" / "learner" / "cycles").glob("*/done"))


def test_the_daemon_schedules_the_cycle_only_for_an_executor_model_it_can_train(tmp_path: Path) -> None:
    from connectors.config import load_config
    from connectors.daemon import learner_job
    from connectors.daemon.schedule import Cron

    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    plain = tmp_path / "plain.toml"
    plain.write_text(f'data_dir = "{tmp_path / "data"}"\n')
    local = tmp_path / "local.toml"
    local.write_text(
        f'data_dir = "{tmp_path / "data"}"\n[executor]\nbackend = "local"\nmodel_dir = "{tmp_path}"\n'
    )
    nightly = Cron.parse("0 3 * * *")
    assert learner_job(load_config(plain, env), nightly) is None
    job = learner_job(load_config(local, env), nightly)
    assert job is not None and job.name == "learner"
    served = tmp_path / "served.toml"  # a served executor trains too (learner/served.py)
    served.write_text(
        f'data_dir = "{tmp_path / "data"}"\n[executor]\nbackend = "openai"\nmodel_dir = "{tmp_path}"\n'
        '[models.executor]\nmodel = "hosted_vllm/tiny"\napi_base = "http://127.0.0.1:9/v1"\n'
    )
    job = learner_job(load_config(served, env), nightly)
    assert job is not None and job.name == "learner"
    no_model = tmp_path / "no_model.toml"  # served, but nothing to train from
    no_model.write_text(
        f'data_dir = "{tmp_path / "data"}"\n[executor]\nbackend = "openai"\n'
        '[models.executor]\nmodel = "hosted_vllm/tiny"\napi_base = "http://127.0.0.1:9/v1"\n'
    )
    assert learner_job(load_config(no_model, env), nightly) is None


def test_the_job_detail_names_the_promoted_version_once() -> None:
    from connectors.daemon.nightly import job_detail
    from connectors.nightly.worker import CycleOutcome

    said = "Night of 2026-12-06: promoted v3 (held-out 0.40 -> 0.55); 5 of 7 episodes became tasks."
    assert job_detail(CycleOutcome(True, "done", summary=said, promoted="v3")) == said
    refused = "Night of 2026-12-06: refused; v2 stays (held-out 0.40 -> 0.41)."
    assert job_detail(CycleOutcome(True, "done", summary=refused)) == refused
    assert job_detail(CycleOutcome(True, "done", summary="cycle 4", promoted="v4")) == "cycle 4; promoted v4"
    assert job_detail(CycleOutcome(True, "done", promoted="v4")) == "promoted v4"
