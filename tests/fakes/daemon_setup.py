"""What the in-process daemon tests share: the config every one starts from, and waiting for
something the daemon does in the background."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path


def base_config(data_dir: Path, model_url: str) -> str:
    """config.toml text: the data dir, the local sandbox, no executor, the planner and the judge
    on the fake model server at `model_url`. Tests append their own tables."""
    models = "".join(
        f'[models.{slot}]\nmodel = "openai/any"\napi_base = "{model_url}"\napi_key_env = ""\n'
        for slot in ("planner", "judge")
    )
    return f'data_dir = "{data_dir}"\n[sandbox]\nbackend = "local"\n[executor]\nenabled = false\n' + models


async def until(condition: Callable[[], object], timeout_s: float = 10.0) -> None:
    """Wait until `condition()` is true; fail the test naming it after `timeout_s`."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {condition}")
        await asyncio.sleep(0.01)
