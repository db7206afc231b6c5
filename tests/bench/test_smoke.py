"""The smallest run of every benchmark in bench/, so that none rots unseen.

Each runs as its own process, as a person runs it, and must exit 0 and print its figures: the
baseline and ratio lines above all. The values are not checked; at these sizes they mean little.
Times noted are from a busy 2-core machine.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.sandbox_backends import in_ci

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}


def run_bench(script: Path, *args: str, timeout: float = 240) -> str:
    """Run `script` with `args` from the repository root; its standard output."""
    result = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, (
        f"{script.name} {' '.join(args)} exited {result.returncode}:\n"
        f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    )
    return result.stdout


def assert_figures(output: str, *names: str) -> None:
    """Each of `names` begins a printed line."""
    lines = output.splitlines()
    missing = [name for name in names if not any(line.startswith(name) for line in lines)]
    assert not missing, f"no line for {missing} in:\n{output}"


@pytest.mark.slow  # ~15 s: torch, the tiny model built, three of its calls
def test_capture() -> None:
    output = run_bench(ROOT / "bench/capture.py", "--episodes", "2", "--turns", "3")
    assert_figures(output, "record_call median:", "naive / token arrays:", "capture overhead share:")
    if importlib.util.find_spec("transformers") is not None:
        assert_figures(output, "tiny model call:", "tiny model prompts extending the previous call:")


@pytest.mark.slow  # ~10 s: the daemon and two bare bots as child processes
def test_daemon() -> None:
    output = run_bench(
        ROOT / "bench/daemon.py",
        *("--warmup", "5", "--burst", "10", "--burst-users", "5", "--latency", "5"),
        *("--rss-messages", "10", "--rss-users", "5"),
    )
    assert_figures(
        output,
        "telegram_messages_per_s_vs_bare_bot:",
        "telegram_added_p50_vs_bare_bot:",
        "slack_messages_per_s_vs_bare_bot:",
        "slack_added_p50_vs_bare_bot:",
        "rss_growth_mb:",
    )


@pytest.mark.slow  # ~17 s with trl: imports, a tiny Qwen2, three steps a side, the 4B estimate
def test_gpu() -> None:
    output = run_bench(ROOT / "bench/gpu.py", "--device", "cpu", "--tiny", "--steps", "2")
    assert_figures(
        output, "ours_tokens_per_s[tiny]:", "ours_mfu[tiny]:", "ours_peak_memory_gib[tiny]:",
        "memory_estimate_4b_gib:", "memory_estimate_4b_fits:",
    )  # fmt: skip
    if importlib.util.find_spec("trl") is not None:
        assert_figures(output, "trl_tokens_per_s[tiny]:", "tokens_per_s_ratio_vs_trl[tiny]:")


@pytest.mark.slow  # ~16 s without trl, ~27 s with it: imports, the tiny model, two iterations a side
def test_learner() -> None:
    output = run_bench(
        ROOT / "bench/learner.py", "--prompts", "2", "--group", "2", "--max-tokens", "8", "--iterations", "1"
    )
    assert_figures(output, "ours iteration:", "ours row building:", "ours update:")
    if importlib.util.find_spec("trl") is None:  # the `bench` extra, not in CI's `all`
        assert_figures(output, "trl: not installed")
    else:
        assert_figures(output, "trl iteration:", "ours / trl iteration time:")


@pytest.mark.slow  # ~35 s: Ray's start, the tiny model loaded by three workers, a replay a side
def test_learner_ray() -> None:
    if importlib.util.find_spec("ray") is None:  # the `scale` extra, in CI's `all`
        if in_ci():
            pytest.fail("ray is not installed: CI installs the `scale` extra", pytrace=False)
        pytest.skip("ray is not installed (pip install 'temper[scale]')")
    output = run_bench(
        ROOT / "bench/learner.py",
        *("--ray", "--prompts", "2", "--group", "2", "--max-tokens", "8", "--iterations", "1"),
    )
    assert_figures(
        output, "in-process replay:", "ray 1 worker replay:", "ray 2 workers replay:",
        "ray 2 / 1 workers:", "ray 2 workers / in-process:",
    )  # fmt: skip


@pytest.mark.slow  # ~20 s, most of it importing litellm
def test_loop() -> None:
    output = run_bench(ROOT / "bench/loop.py", "--turns", "3", "--memory", "500", "--history", "30")
    assert_figures(
        output,
        "fixed_prompt_overhead_tokens:",
        "baseline_bare_openai_call_ms:",
        "runtime_overhead_p50_vs_bare_openai_call:",
        "runtime_overhead_streaming_p50_vs_bare_openai_call:",
        "sandbox_round_trip_subprocess_ms:",
    )


def test_memory(tmp_path: Path) -> None:
    output = run_bench(
        ROOT / "bench/memory.py",
        *("--messages", "2000", "--queries", "20", "--users", "20", "--dir", str(tmp_path)),
    )
    assert_figures(
        output,
        "ingest_ratio_vs_baseline:",
        "query_typical_p99_ratio_vs_baseline:",
        "query_common_p99_ratio_vs_baseline:",
        "query_typical_p50_ratio_vs_peer:",
        "peer_query_common_hit_rate_at_10:",
    )


def test_recall() -> None:
    output = run_bench(ROOT / "bench/recall.py")
    assert_figures(output, "lexical_all_recall@10:", "baseline_all_recall@10:")


LOCOMO_FIGURES = [f"{mode}_recall_at_{k}:" for mode in ("lexical", "baseline") for k in (1, 5, 10)]


def test_recall_on_locomo_format_data() -> None:
    output = run_bench(
        ROOT / "bench/recall.py",
        *("--data", str(ROOT / "tests/fixtures/locomo-tiny.json"), "--lexical-only", "--split", "tiny-1"),
    )
    assert_figures(
        output, *LOCOMO_FIGURES, "lexical_p99_ms:", "baseline_p50_ms:", "lexical_split_recall_at_10:"
    )
    assert "questions: 6" in output.splitlines()  # categories 1-4 only


@pytest.mark.slow  # ~15 s: torch and the embedding model load
def test_recall_on_locomo_format_data_with_hybrid() -> None:
    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("the embeddings extra is not installed")
    output = run_bench(ROOT / "bench/recall.py", "--data", str(ROOT / "tests/fixtures/locomo-tiny.json"))
    assert_figures(output, *LOCOMO_FIGURES, "hybrid_recall_at_10:", "hybrid_p99_ms:")


def test_recall_data_checks_its_labels(tmp_path: Path) -> None:
    """Run on a copy: the generator rewrites its data files next to itself."""
    copy = tmp_path / "bench"
    copy.mkdir()
    shutil.copy(ROOT / "bench/recall_data.py", copy)
    shutil.copytree(ROOT / "bench/data", copy / "data")
    output = run_bench(copy / "recall_data.py", "--check")
    assert "baseline" in output


def test_sandbox() -> None:
    output = run_bench(ROOT / "bench/sandbox.py", "--runs", "3")
    # Each backend is measured where it works, else the bench says why not.
    assert_figures(output, "baseline.subprocess_true_ms:", "docker.", "bwrap.", "local.")
    if ".run_true_vs_subprocess:" not in output:
        unavailable = [line for line in output.splitlines() if ".available: no" in line]
        pytest.skip("no sandbox backend works here: " + "; ".join(unavailable))


def test_skills() -> None:  # ~10 s: litellm's token counter, 230 skills written, a 2,000-skill index
    output = run_bench(ROOT / "bench/skills.py", "--repeats", "1")
    assert_figures(
        output,
        "skill_prompt_tokens_10:",
        "skill_prompt_tokens_200:",
        "skill_prompt_tokens_2000:",
        "skill_retrieval_recall_at_5:",
        "skill_lookup_p99_ms_2000:",
        "baseline_whole_index_tokens_2000:",
        "baseline_fts_or_recall_at_5:",
        "baseline_fts_or_lookup_p99_ms_2000:",
        "near_duplicate_recall:",
    )


def test_tools() -> None:
    output = run_bench(ROOT / "bench/tools.py", "--runs", "5")
    assert_figures(output, "tools_schema_json_chars:", "policy_vs_shlex_ratio:", "toolbox_call_overhead_us:")


@pytest.mark.slow  # ~3-4 min: two days of 6 requests through the real Agent, one night (1 min + its gate)
def test_week(tmp_path: Path, isolating_backend: str) -> None:
    """Its sandboxes are "auto": an isolating backend must work here (skipped, or failed in CI)."""
    output = run_bench(ROOT / "bench/week.py", "--quick", "--days", "2", "--out", str(tmp_path), timeout=900)
    assert_figures(output, "machine:", "day  requests  exec_share")
    assert_figures(
        output,
        "final_executor_share:",
        "final_success:",
        "day1_success:",
        "planner_tokens_per_task_reduction:",
        "training_latency_p50_ratio:",
        "unsandboxed_commands:",
        "crashes:",
    )
    assert (tmp_path / "week.png").stat().st_size > 0
    # Beyond the figures' presence: on day 1 the planner route runs each task's reference
    # commands, so every request passes unless the request -> workspace -> verdict path broke.
    assert_figures(output, "day1_success: 1.000", "crashes: 0")


@pytest.mark.slow  # ~10 s: the read attempts without isolation and in bwrap, then the redactor
def test_security(require_sandbox: Callable[[str], None]) -> None:
    require_sandbox("bwrap")
    output = run_bench(ROOT / "bench/security.py", "--backends", "bwrap", "--only", "read")
    assert_figures(
        output, "local_canaries_read:", "bwrap_attempts:", "bwrap_contained:", "bwrap_canaries_read:"
    )
    assert_figures(output, "secrets_planted:", "secrets_caught:", "false_positive_lines:", "ordinary_lines:")
    assert_figures(output, "secrets_caught_without_detector:", "redact per text:")
