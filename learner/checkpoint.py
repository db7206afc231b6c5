"""Training checkpoints that survive a crash at any moment.

    save_checkpoint(directory, step, policy, optimizer, keep=2)
    path = latest_checkpoint(directory)            # None when there is none yet
    step = load_checkpoint(path, policy, optimizer)

Layout: `<directory>/step-000012/` holding `trainable.safetensors` (the trainable weights by
parameter name: the LoRA matrices, or every weight in full fine-tuning), `optimizer.pt` (AdamW's
moments and step counts), `rng.pt` (torch's CPU and CUDA generator states) and `state.json`
(step, Python's `random` state, the trainable parameter names and shapes).

Invariants:
- A checkpoint folder appears whole or not at all: it is written under a temporary name, its
  files fsynced, then renamed into place; a crash mid-write leaves a temporary folder that is
  ignored (and removed by the next save).
- Resuming restores everything a step depends on, so training resumed from step k gives the same
  weights as training that never stopped.
- Only the newest `keep` checkpoints are kept.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from safetensors.torch import load_file, save_file

from learner.durable import fsync

if TYPE_CHECKING:
    from learner.policy import TrainablePolicy

PREFIX = "step-"
TEMPORARY = ".partial-"


class CheckpointError(RuntimeError):
    """A checkpoint that does not fit the policy being resumed; the message says why."""


def save_checkpoint(
    directory: Path, step: int, policy: TrainablePolicy, optimizer: torch.optim.Optimizer, keep: int = 2
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob(f"{TEMPORARY}*"):
        shutil.rmtree(stale)
    temporary = directory / f"{TEMPORARY}{PREFIX}{step:06d}"
    temporary.mkdir()
    weights = trainable_weights(policy)
    save_file(weights, str(temporary / "trainable.safetensors"))
    torch.save(optimizer.state_dict(), temporary / "optimizer.pt")
    torch.save(_rng_state(), temporary / "rng.pt")
    state = {
        "step": step,
        "python_random": _jsonable(random.getstate()),
        "parameters": {name: list(t.shape) for name, t in weights.items()},
    }
    (temporary / "state.json").write_text(json.dumps(state))
    for file in temporary.iterdir():
        fsync(file)
    final = directory / f"{PREFIX}{step:06d}"
    if final.exists():  # the same step saved again (a resumed run): replace it
        shutil.rmtree(final)
    os.replace(temporary, final)
    fsync(directory)
    for old in _checkpoints(directory)[:-keep]:
        shutil.rmtree(old)
    return final


def trainable_weights(policy: TrainablePolicy) -> dict[str, torch.Tensor]:
    """The policy's trainable tensors by parameter name, on the CPU, as safetensors stores them."""
    return {name: p.detach().cpu().contiguous() for name, p in policy.named_trainable().items()}


def latest_checkpoint(directory: Path) -> Path | None:
    found = _checkpoints(directory) if directory.is_dir() else []
    return found[-1] if found else None


def load_checkpoint(path: Path, policy: TrainablePolicy, optimizer: torch.optim.Optimizer) -> int:
    """Restore weights, optimizer and random state from `path`; returns its step."""
    state = json.loads((path / "state.json").read_text())
    load_trainable_weights(path / "trainable.safetensors", policy)
    optimizer.load_state_dict(torch.load(path / "optimizer.pt", weights_only=True))
    rng = torch.load(path / "rng.pt", weights_only=True)
    torch.set_rng_state(rng["cpu"])
    if torch.cuda.is_available() and rng["cuda"]:
        torch.cuda.set_rng_state_all(rng["cuda"])
    random.setstate(_python_state(state["python_random"]))
    return int(state["step"])


def load_trainable_weights(file: Path, policy: TrainablePolicy) -> None:
    """Copy the tensors of a `trainable_weights` file into `policy`, which must have exactly
    those trainable parameters, in those shapes (CheckpointError otherwise, nothing copied)."""
    weights = load_file(str(file))
    trainable = policy.named_trainable()
    expected = {name: tuple(p.shape) for name, p in trainable.items()}
    found = {name: tuple(w.shape) for name, w in weights.items()}
    if found != expected:
        differing = sorted(set(expected) ^ set(found))[:3]
        raise CheckpointError(
            f"{file} was written for other trainable parameters (differing: {differing or 'shapes'}): "
            "use the same model and LoRA settings, or a new directory"
        )
    with torch.no_grad():
        for name, parameter in trainable.items():
            parameter.copy_(weights[name])


def _checkpoints(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.startswith(PREFIX) and p.is_dir())


def _rng_state() -> dict[str, object]:
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []
    return {"cpu": torch.get_rng_state(), "cuda": cuda}


def _jsonable(state: tuple) -> list:
    version, internal, gauss = state
    return [version, list(internal), gauss]


def _python_state(saved: list) -> tuple:
    version, internal, gauss = saved
    return (version, tuple(internal), gauss)
