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
