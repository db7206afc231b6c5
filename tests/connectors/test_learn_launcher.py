"""`temper learn --now --launcher accelerate`: a whole night with its training across processes
(two CPU ranks over gloo, started by accelerate's launcher), rank 0 replaying, gating and
promoting. The candidate it trains is the one a single process trains on the same rows."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from connectors.config import load_config
from connectors.learning import night_settings
from connectors.nightly.runner import RANKS_MODULE, WORKER_MODULE, worker_command
from learner.rows import build_rows
from learner.sft import SFTSettings, sft
from learner.tasks import synthetic_suite
from learner.train import GRPOTrainer
from learner.warmstart import examples
from memory import MemoryStore
from runtime.executor import LocalModel, build_tiny_model

pytestmark = pytest.mark.slow


def write_config(tmp_path: Path, executor: str) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(
        f'data_dir = "{tmp_path / "data"}"\n[sandbox]\nbackend = "local"\n'
        f"[learner]\nlearning_rate = 0.01\n{executor}"
    )
    return config


def learn(config: Path, *args: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPER_")}
    env.update(TEMPER_CONFIG=str(config), XDG_CONFIG_HOME=str(config.parent / "xdg"), OMP_NUM_THREADS="1")
    temper = str(Path(sys.executable).parent / "temper")
    return subprocess.run(
        [temper, "learn", "--now", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def format_trained(tmp_path: Path) -> Path:
    """The tiny model after two epochs imitating reference solutions: its replies are short
    actions that end (a reply the untrained model cuts at the token limit is context only, not
    trained on), so the step's rows fill more than one micro-batch."""
    model = LocalModel.load(build_tiny_model(tmp_path / "tiny", seed=3))
    tasks = [task for task in synthetic_suite(seed=0, per_family=4) if task.split == "train"]
    trained = sft(model, examples(tasks), SFTSettings(max_epochs=2, learning_rate=3e-3))
    return trained.policy.save_model(tmp_path / "format-trained")


def coin_tasks(data_dir: Path, count: int = 16) -> None:
    """Imported task folders whose verifier passes at random: whatever the tiny model writes,
    a group's attempts differ, so a step has rows to train on (the untrained model fails every
    other task alike, and a group that does not vary teaches nothing)."""
    for index in range(count):
        task = data_dir / "tasks" / f"coin-{index:02d}"
        (task / "tests").mkdir(parents=True)
        (task / "instruction.md").write_text(f"Write the word heads into coin{index}.txt\n")
        (task / "tests" / "test.sh").write_text("#!/bin/bash\n[ $((RANDOM % 2)) -eq 0 ]\n")


def test_two_ranks_train_the_candidate_one_process_would(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    model_dir = format_trained(tmp_path)
    # Twice as many coin tasks as a step draws, and micro-batches of half the default size (about
    # a dozen rows each): whichever 16 tasks the night draws, its rows fill several micro-batches,
    # so each rank has a share (at 8192 positions, a draw of few coin tasks packed into one
    # micro-batch, and rank 1 trained on nothing).
    coin_tasks(tmp_path / "data", count=32)
    config = write_config(
        tmp_path, f'[executor]\nbackend = "local"\nmodel_dir = "{model_dir}"\ndevice = "cpu"\n'
    )
    config.write_text(config.read_text().replace("[learner]\n", "[learner]\nmicro_batch_tokens = 4096\n"))

    done = learn(
        config, "--launcher", "accelerate", "--processes", "2", "--iterations", "1", "--per-family", "2"
    )

    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    assert "Training with 2 processes under accelerate's launcher" in done.stdout
    assert "iteration 0: train reward" in done.stdout  # rank 0's log, shown as it was written
    assert "rank 1: trained 1 step(s) on its share of each batch" in done.stdout
    assert "Night of" in done.stdout  # the report
    (done_file,) = (tmp_path / "data" / "learner" / "cycles").glob("*/done")
    work_dir = done_file.parent

    # The same step in one process, on the rows the night trained on: the same adapter.
    settings = night_settings(load_config(config), iterations=1, seed=0, deadline=None).cycle
    with MemoryStore.open(load_config(config).memory.db_path) as store:
        rows = build_rows(store.trajectories.read(split="train"), settings.rows)
    assert len(rows.packs) >= 2  # both ranks had a share
    alone = GRPOTrainer(LocalModel.load(model_dir), settings.train)
    alone.step(rows)
    expected = load_file(alone.save_adapter(tmp_path / "alone") / "adapter_model.safetensors")
    trained = load_file(work_dir / "candidate" / "adapter_model.safetensors")
    assert trained.keys() == expected.keys()
    # Equal up to the order of float additions, which differs with the ranks' shares. Adam's first
    # step moves each weight by about the learning rate (0.01) times the sign of its gradient, so
    # a rank's share lost or counted twice moves weights by ~1e-2; an element whose gradient is
    # near Adam's epsilon turns float-order noise into ~1e-5 (seen once in CI): 1e-4 tells them apart.
    for name in expected:
        torch.testing.assert_close(trained[name], expected[name], rtol=1e-3, atol=1e-4)
    assert any(name.endswith("lora_B.weight") and expected[name].abs().sum() > 0 for name in expected)


def test_a_night_that_cannot_start_lets_every_rank_leave(tmp_path: Path) -> None:
    """Rank 0 stops before training (no executor model to train): the other rank, waiting for
    what to train, is released instead of waiting for a day."""
    config = write_config(tmp_path, "")
    started = time.monotonic()

    done = learn(config, "--launcher", "accelerate", "--processes", "2", timeout=240)

    assert done.returncode == 1, done.stdout[-3000:]
    assert "trains an executor model" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 200


def test_the_worker_command_follows_the_launcher(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, ""))
    one = worker_command(config, ["result.json", "60", "5", "8", "123"])
    assert one == [sys.executable, "-m", WORKER_MODULE, "result.json", "60", "5", "8", "123"]

    launched = config.model_copy(
        update={"learner": config.learner.model_copy(update={"launcher": "accelerate", "processes": 4})}
    )
    command = worker_command(launched, ["result.json", "60", "5", "8", "123"])
    assert command[:3] == [sys.executable, "-m", "accelerate.commands.launch"]
    assert command[command.index("--num_processes") + 1] == "4"
    assert int(command[command.index("--main_process_port") + 1]) > 0
    module = command.index(RANKS_MODULE)
    assert command[module - 1] == "-m"
    assert command[module + 1 :] == ["--device", "auto", "--nice", "10", "result.json", "60", "5", "8", "123"]
