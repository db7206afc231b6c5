"""Learner benchmark: one full GRPO iteration, our learner against trl's GRPOTrainer.

Same run, same tiny model (runtime/executor/tiny.py, weights from one seed), same P chat prompts,
G completions each, the same maximum completion length, LoRA of the same rank on the same
modules for both, one torch thread, float32. An iteration is: generate G completions for each
of the P prompts, score them with a verifiable reward (1 when the completion contains the
prompt's target string, else 0), and take one optimizer step. The targets are common
two-letter strings, so that a random model hits them about half the time and groups vary.

Prints `name: value` lines: seconds per iteration for each (median over the iterations after a
warm-up one) and their ratio, where the time goes (generation, row building, update), the row
builder's share of our step, training tokens/s, and the zero-variance group fraction.
Targets (issue 5): ours <= 0.7x trl's time; row building < 5% of a step.

Our side samples the way the learner's replay does: all P x G attempts ask one `GroupBatcher`
at once and get one cross-prompt batch (learner/batching.py, `LocalModel.sample_batch`), as trl
samples all P x G sequences in one `generate` call. The sides alternate (one of our iterations
after each of trl's steps), so that load from other processes on a shared machine falls on both.

    python bench/learner.py [--prompts 4] [--group 8] [--max-tokens 32] [--iterations 6]
    python bench/learner.py --system     # prompts after the executor's system prompt, as replays are
    python bench/learner.py --device cuda --hidden 768 --layers 12 --heads 12   # ~90M parameters
    python bench/learner.py --prompts 2 --group 2 --max-tokens 8 --iterations 1  # the smallest run

Without trl (the `bench` extra) it times our side alone and says so.

    python bench/learner.py --ray --prompts 4 --group 4 --iterations 2   # replays: in process vs Ray
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import math
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory.trajectory_records import Trajectory
    from runtime.executor.completion import Completion

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGETS = ("er", "in", "on", "it", "re", "at", "an", "es")
LORA_RANK = 8
LORA_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj"]
LEARNING_RATE = 1e-4


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, str]]
    target: str


@dataclass(frozen=True)
class Iteration:
    """Seconds spent in one iteration, and the tokens its update trained on."""

    total_s: float
    generate_s: float
    rows_s: float  # 0 for trl: its batching is part of its update
    update_s: float
    tokens: int  # prompt + completion tokens of every sequence in the update
    zero_variance_groups: int


def make_prompts(count: int, system: str | None = None) -> list[Prompt]:
    """`count` prompts, each after `system` as a system message when given."""
    before = [] if system is None else [{"role": "system", "content": system}]
    return [
        Prompt([*before, {"role": "user", "content": f"Write a word that contains '{t}'."}], t)
        for t in (TARGETS * (count // len(TARGETS) + 1))[:count]
    ]


def reward(text: str, target: str) -> float:
    return 1.0 if target in text else 0.0


def zero_variance(rewards: list[float], group: int) -> int:
    groups = [rewards[i : i + group] for i in range(0, len(rewards), group)]
    return sum(1 for g in groups if len(set(g)) == 1)


# trl ----------------------------------------------------------------------------------------


def trl_iterations(
    model_dir: Path, prompts: list[Prompt], args: argparse.Namespace, between: Callable[[], None]
) -> list[Iteration]:
    """trl's steps, timed; `between` runs after each one, outside the timed span."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
        PrinterCallback,
        TrainerCallback,
    )
    from trl import GRPOConfig, GRPOTrainer

    class Clock(TrainerCallback):
        """Times each step, and the generation inside it (the trainer's `_generate`)."""

        def __init__(self) -> None:
            self.started = self.generating = 0.0
            self.steps: list[Iteration] = []
            self.rewards: list[float] = []
            self.tokens_before = 0

        def on_step_begin(self, _args: Any, state: Any, _control: Any, **_: Any) -> None:
            self.generating = 0.0
            self.tokens_before = state.num_input_tokens_seen
            self.started = time.perf_counter()

        def on_step_end(self, _args: Any, state: Any, _control: Any, **_: Any) -> None:
            total = time.perf_counter() - self.started
            self.steps.append(Iteration(
                total_s=total, generate_s=self.generating, rows_s=0.0, update_s=total - self.generating,
                tokens=int(state.num_input_tokens_seen - self.tokens_before),
                zero_variance_groups=zero_variance(self.rewards[-len(prompts) * args.group :], args.group),
            ))  # fmt: skip

    class Between(TrainerCallback):
        def on_step_end(self, *_: Any, **__: Any) -> None:
            between()

    clock = Clock()

    def contains_target(completions: list[list[dict[str, str]]], target: list[str], **_: Any) -> list[float]:
        rewards = [reward(c[0]["content"], t) for c, t in zip(completions, target, strict=True)]
        clock.rewards.extend(rewards)
        return rewards

    with tempfile.TemporaryDirectory() as output:
        config = GRPOConfig(
            output_dir=output, use_cpu=args.device == "cpu", seed=0, data_seed=0,
            per_device_train_batch_size=len(prompts) * args.group, num_generations=args.group,
            gradient_accumulation_steps=1, steps_per_generation=1, num_iterations=1,
            max_completion_length=args.max_tokens, temperature=1.0, top_p=1.0,
            learning_rate=LEARNING_RATE, beta=0.0, loss_type="dapo", max_grad_norm=1.0,
            max_steps=args.iterations + 1, gradient_checkpointing=False, bf16=False,
            logging_steps=1, report_to="none", save_strategy="no", disable_tqdm=True,
            dataloader_num_workers=0,
        )  # fmt: skip
        trainer = GRPOTrainer(
            model=AutoModelForCausalLM.from_pretrained(model_dir),
            reward_funcs=contains_target,
            args=config,
            train_dataset=Dataset.from_list([{"prompt": p.messages, "target": p.target} for p in prompts]),
            processing_class=AutoTokenizer.from_pretrained(model_dir),
            peft_config=LoraConfig(r=LORA_RANK, lora_alpha=2 * LORA_RANK, target_modules=LORA_MODULES),
            callbacks=[clock, Between()],
        )
        trainer.remove_callback(PrinterCallback)  # its log dict per step would bury the figures
        generate = trainer._generate  # timed by wrapping the bound method: trl has no hook for it

        def timed_generate(*call_args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            result = generate(*call_args, **kwargs)
            clock.generating += time.perf_counter() - began
            return result

        trainer._generate = timed_generate  # type: ignore[method-assign]
        trainer.train()
    return clock.steps[1:]  # the first one warms up


# ours ---------------------------------------------------------------------------------------


def ours_learner(
    model_dir: Path, prompts: list[Prompt], args: argparse.Namespace
) -> Callable[[int], Iteration]:
    """Sample through the path the learner's replay takes (learner/replay.py): each of the P x G
    attempts asks `GroupBatcher` over `LocalBackend` for a completion with its own seed, and the
    batcher answers them with one batch (`LocalModel.sample_batch`: all prompts left-padded
    together, logprobs captured), from the policy being trained; then score, `build_rows`,
    `GRPOTrainer.step`. Sandboxes and recording are left out: trl has neither.
    Settings match trl's: token-level loss (DAPO), truncated completions trained on, no KL,
    clip 0.2 both sides."""
    from learner.batching import GroupBatcher
    from learner.policy import LoraSettings
    from learner.rows import RowSettings, build_rows
    from learner.train import GRPOTrainer, TrainSettings
    from runtime.executor.completion import SamplingParams
    from runtime.executor.local_backend import LocalBackend
    from runtime.executor.local_model import LocalModel

    lora = LoraSettings(rank=LORA_RANK, alpha=2 * LORA_RANK, target_modules=tuple(LORA_MODULES))
    settings = TrainSettings(lora=lora, learning_rate=LEARNING_RATE, epsilon_high=0.2, checkpoint_every=0)
    trainer = GRPOTrainer(LocalModel.load(model_dir, device=args.device), settings)
    rows = RowSettings(normalisation="token", mask_truncated=False)
    backend = LocalBackend(
        trainer.policy.sampler
    )  # the live weights: each iteration samples the updated policy

    async def generate(first_seed: int) -> list[Completion]:
        batcher = GroupBatcher(backend)

        async def attempt(prompt: Prompt, seed: int) -> Completion:
            async with batcher.attempt():
                sampling = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=args.max_tokens, seed=seed)
                return await batcher.complete(prompt.messages, sampling)

        seeds = range(first_seed, first_seed + len(prompts) * args.group)
        return await asyncio.gather(*(attempt(prompts[i // args.group], s) for i, s in enumerate(seeds)))

    def iterate(iteration: int) -> Iteration:
        """One timed iteration; `iteration` picks its seeds."""
        began = time.perf_counter()
        completions = asyncio.run(generate(iteration * len(prompts) * args.group))
        trajectories = [
            _trajectory(number, f"p{number // args.group}", completion, reward(completion.text, prompts[number // args.group].target))
            for number, completion in enumerate(completions)
        ]  # fmt: skip
        generated = time.perf_counter()
        batch = build_rows(trajectories, rows)
        built = time.perf_counter()
        trainer.step(batch)
        done = time.perf_counter()
        return Iteration(
            total_s=done - began, generate_s=generated - began, rows_s=built - generated,
            update_s=done - built, tokens=batch.stats.tokens,
            zero_variance_groups=batch.stats.zero_variance_groups,
        )  # fmt: skip

    return iterate


def _trajectory(number: int, group: str, completion: Completion, score: float) -> Trajectory:
    """One single-call training episode, as memory would hand it back."""
    from memory.trajectory_records import ExecutorEpisode, RecordedCall, Trajectory

    episode = ExecutorEpisode(
        id=number, kind="executor", task=group, status="done", reward=score, reward_source="verifier",
        reward_reason=None, split="train", group_id=group, sandbox_backend=None, snapshot_id=None,
        snapshot_bytes=None, verifier=None, parent_episode_id=None, session_id=None, user_id=None,
        contains_secret=False, created_at=0.0, finished_at=None,
    )  # fmt: skip
    call = RecordedCall(
        role="executor", model="tiny", prompt_ids=completion.prompt_ids, completion_ids=completion.completion_ids,
        completion_logprobs=completion.completion_logprobs, finish_reason=completion.finish_reason,
        sampling=completion.sampling.as_dict(), id=number, episode_id=number, index=0, extends_previous=False,
        mismatch=None, common_prefix=0, created_at=0.0,
    )  # fmt: skip
    return Trajectory(episode, [call])


# main ---------------------------------------------------------------------------------------


def summarise(name: str, iterations: list[Iteration], groups: int) -> tuple[float, float]:
    """Print one side's figures; return its median iteration and update seconds."""
    total = statistics.median(i.total_s for i in iterations)
    generate = statistics.median(i.generate_s for i in iterations)
    rows = statistics.median(i.rows_s for i in iterations)
    update = statistics.median(i.update_s for i in iterations)
    tokens = statistics.median(i.tokens for i in iterations)
    zero = sum(i.zero_variance_groups for i in iterations) / len(iterations)
    print(f"{name} iteration: {total:.3f} s (median of {len(iterations)})")
    print(f"{name} generation: {generate:.3f} s ({generate / total:.0%})")
    if rows:
        print(
            f"{name} row building: {rows * 1000:.1f} ms ({rows / (rows + update):.1%} of a step; target < 5%)"
        )
    print(f"{name} update: {update:.3f} s ({update / total:.0%})")
    print(
        f"{name} training tokens/s: {tokens / update:,.0f} (update only), {tokens / total:,.0f} (whole iteration)"
    )
    print(f"{name} zero-variance groups: {zero:.1f} of {groups} per iteration")
    return total, update


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=4, help="P")
    parser.add_argument("--group", type=int, default=8, help="G: completions per prompt")
    parser.add_argument("--max-tokens", type=int, default=32, help="maximum completion length")
    parser.add_argument("--iterations", type=int, default=6, help="timed, after one warm-up")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument(
        "--system", action="store_true",
        help="every prompt begins with the executor's system prompt (~200 tokens), as the learner's replays do",
    )  # fmt: skip
    parser.add_argument(
        "--ray", action="store_true",
        help="instead: replay throughput in process and on 1 and 2 Ray workers (learner/ray_replay.py)",
    )  # fmt: skip
    args = parser.parse_args()

    import torch
    from transformers.utils import logging as transformers_logging

    from runtime.executor.prompts import SYSTEM
    from runtime.executor.tiny import build_tiny_model

    warnings.filterwarnings("ignore", category=FutureWarning)  # transformers 5 renames, for trl
    transformers_logging.disable_progress_bar()

    torch.set_num_threads(1)
    if args.ray:
        ray_replays(args)
        return
    prompts = make_prompts(args.prompts, SYSTEM if args.system else None)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_tiny_model(
            Path(tmp) / "tiny", seed=0, hidden=args.hidden, layers=args.layers, heads=args.heads
        )
        parameters = _parameters(model_dir)
        print(
            f"model: Qwen3 from a config, {parameters / 1e6:.1f}M parameters, {args.device}, torch threads 1"
        )
        print(
            f"setup: P={args.prompts} prompts x G={args.group}, max {args.max_tokens} completion tokens, LoRA r={LORA_RANK} {'/'.join(LORA_MODULES)}, "
            f"{'the executor system prompt first' if args.system else 'no system prompt'}"
        )
        iterate, ours_runs = ours_learner(model_dir, prompts, args), []
        if importlib.util.find_spec("trl") is None:
            print("trl: not installed (pip install 'temper[bench]'): our side alone, no ratios")
            ours_runs = [iterate(n) for n in range(args.iterations + 1)]
            summarise("ours", ours_runs[1:], len(prompts))  # the first one warms up
            return
        # One of ours after each of trl's steps, so that both sides see the same load.
        trl_runs = trl_iterations(model_dir, prompts, args, lambda: ours_runs.append(iterate(len(ours_runs))))
        trl, trl_update = summarise("trl", trl_runs, len(prompts))
        ours, ours_update = summarise("ours", ours_runs[1:], len(prompts))  # the first one warms up
        print(f"ours / trl iteration time: {ours / trl:.2f}x (target <= 0.7x)")
        print(f"ours / trl update time: {ours_update / trl_update:.2f}x")


def ray_replays(args: argparse.Namespace) -> None:
    """Replay throughput (attempts/s): learner/replay.py in this process (the baseline), then
    learner/ray_replay.py on a local Ray instance with 1 and 2 workers, each holding the policy.
    P synthetic tasks x G attempts, two turns of at most --max-tokens each, in the strongest
    isolating sandbox here; each side warms up once (workers load the model and the adapter),
    then replays --iterations times."""
    import ray

    from learner.policy import LoraSettings, TrainablePolicy
    from learner.ray_replay import RayReplay, RaySettings
    from learner.replay import ReplaySettings, replay
    from learner.tasks import synthetic_suite
    from memory import MemoryStore
    from runtime.executor import LocalBackend, LocalModel, SamplingParams, build_tiny_model
    from runtime.executor.loop import ExecutorSettings

    tasks = synthetic_suite(seed=0, per_family=2)[: args.prompts]
    executor = ExecutorSettings(
        max_turns=2, sampling=SamplingParams(temperature=1.0, max_tokens=args.max_tokens)
    )
    settings = ReplaySettings(group_size=args.group, executor=executor)
    attempts = len(tasks) * args.group
    print(
        f"setup: {len(tasks)} tasks x G={args.group}, 2 turns of at most {args.max_tokens} tokens, tiny model, cpu"
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        model_dir = build_tiny_model(
            root / "tiny", seed=0, hidden=args.hidden, layers=args.layers, heads=args.heads
        )
        policy = TrainablePolicy.create(LocalModel.load(model_dir), LoraSettings(rank=LORA_RANK), seed=0)
        store = MemoryStore.open(root / "memory.db")

        def rate(run: Callable[[str], Any]) -> float:
            run("warm-up")
            began = time.perf_counter()
            for iteration in range(args.iterations):
                run(f"bench{iteration}")
            return attempts * args.iterations / (time.perf_counter() - began)

        backend = LocalBackend(policy.sampler)
        here = rate(lambda label: asyncio.run(replay(tasks, backend, store, root / "snap", settings, label)))
        print(f"in-process replay: {here:.2f} attempts/s")
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            rates = {}
            for workers in (1, 2):
                cluster = RayReplay.connect(model_dir, RaySettings(address="local", workers=workers))
                rates[workers] = rate(
                    lambda label, c=cluster: asyncio.run(
                        c.replay(tasks, policy, store, root / "snap", settings, label)
                    )
                )
                print(
                    f"ray {workers} worker{'s' if workers > 1 else ''} replay: {rates[workers]:.2f} attempts/s"
                )
                del cluster  # its actors end with it
        finally:
            ray.shutdown()
        print(f"ray 2 / 1 workers: {rates[2] / rates[1]:.2f}x")
        print(f"ray 2 workers / in-process: {rates[2] / here:.2f}x")


def _parameters(model_dir: Path) -> int:
    from safetensors import safe_open

    with safe_open(str(model_dir / "model.safetensors"), "pt") as weights:
        names = weights.keys()  # safe_open is not iterable
        return sum(math.prod(weights.get_slice(name).get_shape()) for name in names)


if __name__ == "__main__":
    main()
