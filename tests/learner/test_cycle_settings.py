"""learner.cycle.CycleSettings: a cycle refuses settings it could not carry through to promotion."""

from __future__ import annotations

import pytest

from learner.cycle import CycleSettings
from learner.policy import LoraSettings
from learner.train import TrainSettings


def test_a_cycle_refuses_full_fine_tuning_before_it_trains() -> None:
    with pytest.raises(ValueError, match="LoRA adapter"):
        CycleSettings(train=TrainSettings(lora=None))
    assert CycleSettings(train=TrainSettings(lora=LoraSettings(rank=8))).train.lora is not None


def test_guidance_with_several_training_processes_is_refused() -> None:
    """A guidance step trains rank 0's adapter alone, which would leave the ranks apart."""
    import torch

    from learner.data_parallel import DataParallel
    from learner.followers import Followers
    from learner.guidance import GuidanceSettings

    followers = Followers(DataParallel(rank=0, world_size=2, device=torch.device("cpu")))
    with pytest.raises(ValueError, match="one training process"):
        CycleSettings(followers=followers, guidance=GuidanceSettings())
    assert CycleSettings(followers=followers).guidance is None
    assert CycleSettings(guidance=GuidanceSettings()).followers is None
