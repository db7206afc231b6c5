"""Scoring a turn's work: a verifier if the task has one, else an LLM judge, else nothing.

A person's /good or /bad arrives later and overrides both (memory ranks reward sources
user > verifier > judge). Only turns that did work (ran a tool) are judged: rating small
talk costs a model call and teaches nothing. A judge that fails or answers nonsense leaves
the turn unscored, with the reason; it never fails the turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from runtime import prompts
from runtime.models import ChatModel, ModelError
from runtime.sandbox import CommandResult

VERIFIER_TIMEOUT_S = 120.0
TRANSCRIPT_CHARS = 12_000
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


@dataclass(frozen=True)
class Score:
    reward: float | None
    source: str | None
    reason: str


async def verify(run: Callable[[str, float], Awaitable[CommandResult]], check: str) -> Score:
    """Run the task's check command in the sandbox: exit 0 is success."""
    result = await run(check, VERIFIER_TIMEOUT_S)
    if result.timed_out:
        return Score(0.0, "verifier", f"check timed out after {VERIFIER_TIMEOUT_S:.0f} s")
    return Score(1.0 if result.exit_code == 0 else 0.0, "verifier", f"check exited {result.exit_code}")


async def judge(model: ChatModel, request: str, transcript: list[dict[str, Any]], reply: str) -> Score:
    """Ask the judge model to grade the turn by the rubric in prompts.JUDGE."""
    work = _render_transcript(transcript)
    try:
        answer = await model.complete(
            [
                {"role": "system", "content": prompts.JUDGE},
                {"role": "user", "content": f"Request:\n{request}\n\nWork:\n{work}\n\nFinal reply:\n{reply}"},
            ]
        )
    except ModelError as error:
        return Score(None, None, f"judge unavailable: {error}")
    return parse_judgement(answer.text)


def parse_judgement(text: str) -> Score:
    match = _JSON_OBJECT.search(text)
    try:
        verdict: Any = json.loads(match.group(0)) if match else None
        score = float(verdict["score"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        return Score(None, None, f"judge answer was not a score: {text[:120]!r}")
    if not 0.0 <= score <= 1.0:
        return Score(None, None, f"judge score out of range: {score}")
    return Score(score, "judge", str(verdict.get("reason", ""))[:300])


def _render_transcript(transcript: list[dict[str, Any]]) -> str:
    lines = []
    for message in transcript:
        for call in message.get("tool_calls") or []:
            lines.append(f"called {call['function']['name']}({call['function']['arguments']})")
        if message["role"] == "tool":
            lines.append(f"result: {message['content']}")
    text = "\n".join(lines)
    if len(text) > TRANSCRIPT_CHARS:  # keep the start and the end, where outcomes show
        half = TRANSCRIPT_CHARS // 2
        text = text[:half] + "\n…\n" + text[-half:]
    return text
