"""The redactor measured (tests/security/secret_corpus.py), the shapes the security issue found
passing through, and the whole way from an executor's command output to the learner: no secret
reaches a stored trajectory, an export, a training row or an error message."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from connectors.config import load_config
from connectors.redaction import configured_secrets, open_memory
from learner.rows import RowSettings, build_rows
from memory import MemoryStore, export_trajectories, redact
from runtime.executor import Completion, SamplingParams
from runtime.executor.loop import ExecutorSettings, run_executor
from runtime.executor.recording import MemoryRecorder
from runtime.models.errors import scrub
from runtime.sandbox import SandboxOptions, open_sandbox
from runtime.tools import ToolContext
from tests.security.secret_corpus import DEVELOPMENT_SEED, HELDOUT_SEED, measure_redaction, plant_secrets

# (what the issue lists, a line holding it, the secret in that line): each passed through
# memory/secrets.py unredacted before this redactor.
ISSUE_SHAPES = [
    ("API_KEY=...", "export API_KEY=Zx81kQpL0vNw3RtY7uMa", "Zx81kQpL0vNw3RtY7uMa"),
    ("SECRET_TOKEN=...", "SECRET_TOKEN=tok-9f8e7d6c5b4a3f2e1d0c npm run release", "tok-9f8e7d6c5b4a3f2e1d0c"),
    ('"api_key": "..."', '{"api_key": "q8Xw2Lm4Np6Rt0Vz3Bc5", "region": "eu-west-1"}', "q8Xw2Lm4Np6Rt0Vz3Bc5"),
    ("password: x", "db:\n  user: app\n  password: x\n  port: 5432", "password: x"),
    ("hf_...", "HF_HUB_TOKEN set: hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567", "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567"),
    ("AIza...", "https://maps.googleapis.com/x?key=AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    ("Bearer ...", "curl -H 'Authorization: Bearer 9c1f0e2d3b4a5968778695a4b3c2d1e0' https://api.example.com", "9c1f0e2d3b4a5968778695a4b3c2d1e0"),
    ("sk_live_...", "stripe.api_key = sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("glpat-...", "git clone https://gitlab.com/acme/x.git # glpat-Ab12Cd34Ef56Gh78Ij90", "glpat-Ab12Cd34Ef56Gh78Ij90"),
    ("xai-...", "Using xai-" + "Qw3" * 27 + " for grok", "xai-" + "Qw3" * 27),
    ("gsk_...", "groq key gsk_" + "Zy9x" * 13 + " loaded", "gsk_" + "Zy9x" * 13),
]  # fmt: skip


@pytest.mark.parametrize(("shape", "text", "secret"), ISSUE_SHAPES, ids=[s[0] for s in ISSUE_SHAPES])
def test_each_shape_the_issue_found_is_redacted(shape: str, text: str, secret: str) -> None:
    redaction = redact(text)
    assert redaction.found >= 1
    if shape == "password: x":
        assert "password: [REDACTED:" in redaction.text and "password: x" not in redaction.text
    else:
        assert secret not in redaction.text
    assert redact(redaction.text).found == 0


@pytest.mark.parametrize("seed", [DEVELOPMENT_SEED, HELDOUT_SEED])
def test_the_corpus_is_caught_whole_with_few_false_positives(seed: int) -> None:
    figures = measure_redaction(seed)
    assert figures["secrets_planted"] >= 200 and len({p.kind for p in plant_secrets(seed)}) >= 25
    assert figures["secrets_caught"] == figures["secrets_planted"]
    assert figures["ordinary_lines"] >= 2000
    assert figures["false_positive_lines"] <= 0.01 * figures["ordinary_lines"]


def test_model_error_messages_mask_the_key_and_redact_the_rest() -> None:
    key = "sk-test-0123456789abcdefWXYZ"
    message = scrub(f"401: key {key} refused; retry with Authorization: Bearer gsk_{'Ab1' * 18}", key)
    assert key not in message and "gsk_" not in message and "sk-…WXYZ" in message


# --- from an executor's output to the learner --------------------------------------------------

CONFIGURED = "operator-key-Zq81-local-9d"  # in secrets.toml: no detector knows its shape
SHAPED = "ghp_" + "Kx81Lm2Np3Qr4St5Uv6Wx7Yz0Ab1Cd2Ef3Gh"


class ScriptedExecutor:
    """An executor backend that replies with `replies` in turn, its ids one per character."""

    name = "scripted"

    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)

    async def complete(self, messages: Sequence[dict[str, Any]], sampling: SamplingParams) -> Completion:
        text = self.replies.pop(0)
        prompt = [ord(c) for m in messages for c in m["content"] + "\n"]
        return Completion(
            text=text,
            prompt_ids=prompt,
            completion_ids=[ord(c) for c in text],
            completion_logprobs=[-0.5] * len(text),
            finish_reason="stop",
            model="scripted",
        )


def action(command: str | None) -> str:
    commands = [] if command is None else [{"keystrokes": command, "timeout": 5}]
    return json.dumps({"analysis": "looked", "commands": commands, "task_complete": command is None})


async def run_episode(
    store: MemoryStore, workspace: Path, command: str, reward: float, tmp_path: Path
) -> int:
    recorder = MemoryRecorder(store, tmp_path / "snapshots", split="train", group_id="g1")
    async with open_sandbox("local", workspace=workspace, options=SandboxOptions()) as sandbox:
        context = ToolContext(user="learner", sandbox=sandbox, memory=store)
        episode = await recorder.start("summarise the notes", "scripted", context)
        run = await run_executor(
            ScriptedExecutor([action(command), action(None)]), context, "summarise the notes",
            ExecutorSettings(max_turns=3),
            on_call=lambda _index, completion, messages: recorder.record(episode, completion, messages),
        )  # fmt: skip
        await recorder.finish(episode, run)
    store.episodes.record_reward(episode, reward, "verifier", "check")
    return episode


@pytest.mark.anyio
async def test_secrets_in_command_output_never_reach_trajectories_exports_or_rows(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(f'data_dir = "{tmp_path / "data"}"\n[sandbox]\nbackend = "local"\n')
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(f'[models.planner]\napi_key = "{CONFIGURED}"\n')
    os.chmod(secrets, 0o600)
    config = load_config(tmp_path / "config.toml", {"XDG_CONFIG_HOME": str(tmp_path)})
    assert CONFIGURED in configured_secrets(config, {})
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "readme.txt").write_text("nothing to see here\n")
    (workspace / "notes.txt").write_text(f"deploy key {CONFIGURED}\nGITHUB_TOKEN={SHAPED}\n")

    with open_memory(config, {}) as store:  # what `temper learn` opens (connectors/learning.py)
        clean = [await run_episode(store, workspace, "cat readme.txt", r, tmp_path) for r in (1.0, 0.0)]
        leaky = await run_episode(store, workspace, "cat notes.txt", 1.0, tmp_path)

        assert store.trajectories.executor_episode(leaky).contains_secret
        stored = "\n".join(
            str(row)
            for table in ("episodes", "model_calls")
            for row in store.db.execute(f"select * from {table}")
        )
        assert "nothing to see here" in stored and "[REDACTED:configured]" in stored
        assert CONFIGURED not in stored and SHAPED not in stored

        export = tmp_path / "out.jsonl"
        report = export_trajectories(store, export, secrets=configured_secrets(config, {}))
        assert (report.episodes, report.excluded_secret) == (2, 1)
        assert CONFIGURED not in export.read_text() and SHAPED not in export.read_text()

        # As the learning cycle builds its rows (learner/cycle.py).
        withheld = store.trajectories.secret_marked_count(split="train")
        batch = build_rows(store.trajectories.read(split="train"), RowSettings(), secret_withheld=withheld)
        assert {row.episode_id for row in batch.rows} == set(clean)
        assert batch.stats.secret_episodes == 1
        secret_ids = [ord(c) for c in SHAPED]
        for row in batch.rows:
            tokens = row.tokens
            assert not any(tokens[i : i + len(secret_ids)] == secret_ids for i in range(len(tokens)))
