"""GPU learner benchmark: our GRPO update against trl's GRPOTrainer on ~0.5B and ~1.5B models.

Models of a real architecture built from a config (Qwen2.5-0.5B's and Qwen2.5-1.5B's shapes,
random weights, the vocabulary of 151,936 kept; the tokenizer is the tiny model's, trained here in
a second, so everything runs offline), bf16 on the GPU, LoRA. For each size, in one run: our
learner as the nightly cycle uses it (`LocalModel.load`, learner/train.py `GRPOTrainer` over
learner/policy.py `TrainablePolicy`, rows from learner/rows.py `build_rows`, samples through the
replay's `GroupBatcher`), then trl's `GRPOTrainer`, at equal settings: the same model directory,
P prompts x G completions, maximum completion length, temperature 1, LoRA rank, alpha and target
modules, learning rate, token-level (DAPO) loss, clip 0.2, no KL term, gradient clipping at 1, no
gradient checkpointing, one optimizer step per generation, truncated completions trained on
(a random model rarely ends a reply, so every completion runs to the maximum length). The
reward is a hash of the completion's token ids: it differs between completions, so no group is
dropped for zero variance and both sides train on every row. Defaults: P=4 x G=8 with 256
completion tokens (32 sequences of ~280 tokens, ~9k tokens an update), LoRA r=8 alpha 16 on every
linear layer. Our side computes a micro-batch's common prefix once (learner/logprobs.py); with
these short prompts that saves little, and the tokens counted are every row's all the same.

Measured on the update (forward, backward, optimizer step; generation and scoring excluded),
the median over `--steps` steps after a warm-up one:

- tokens/s: prompt + completion tokens of every sequence, padding excluded (trl's
  `num_input_tokens_seen`, our `RowStats.tokens`), over the update's seconds;
- peak memory: `torch.cuda.max_memory_allocated` from the start of the update to its end (so it
  includes what is resident: weights, adapter, optimizer state). On CPU: the process's peak RSS so
  far (`ru_maxrss`), which never goes down, so trl's figure includes ours;
- MFU = tokens/s x 6N / peak FLOP/s, N the base model's parameters (tied embeddings counted
  once: the output head does the matmul). 6N is the usual convention (forward 2N, backward 4N;
  PaLM, appendix B) and the target's. It leaves out attention's own FLOPs (12 x layers x hidden x
  sequence per token: a few percent at these lengths) and flatters LoRA: with the base frozen,
  backward skips the weight gradients (2N), so the matmul work done is about 4N a token, and the
  4N figure is printed beside it. Peak FLOP/s is bf16 dense from the device's name: H100 SXM and
  H200 989 TFLOP/s, H100 PCIe 756, A100 312; `--peak-tflops` overrides (needed on CPU).

Then learner/memory_estimate.py's estimate of a nightly cycle on a 4B model (Qwen3-4B's shape,
weights as a sparse file of zeros: only the headers are read) against the device's free memory.
Targets (issue 22): ours >= 1.5x trl's tokens/s at equal settings; MFU >= 30% on the update.

    bench/gpu.sh                                         # the prepared GPU run (~4 min on an H100)
    python bench/gpu.py --device cuda --sizes 0.5b,1.5b --steps 3
    python bench/gpu.py --device cpu --tiny --steps 2    # the smoke run: a tiny Qwen2, seconds
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import json
import math
import resource
import statistics
import sys
import tempfile
import time
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from runtime.executor.completion import Completion

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GIB = 1 << 30
LORA_MODULES = "all-linear"  # the nightly default (learner/policy.py LoraSettings)
LEARNING_RATE = 1e-4
# bf16 dense tensor-core peaks, TFLOP/s, matched against torch.cuda.get_device_name (first wins)
PEAK_TFLOPS = (("H100 PCIe", 756.0), ("H100", 989.0), ("H200", 989.0), ("A100", 312.0))
SHAPES: dict[str, dict[str, Any]] = {  # config.json fields of the models named
    "tiny": {"architecture": "qwen2", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 4096},
    "0.5b": {"architecture": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
             "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936},  # Qwen2.5-0.5B
    "1.5b": {"architecture": "qwen2", "hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28,
             "num_attention_heads": 12, "num_key_value_heads": 2, "vocab_size": 151936},  # Qwen2.5-1.5B
    "4b": {"architecture": "qwen3", "hidden_size": 2560, "intermediate_size": 9728, "num_hidden_layers": 36,
           "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936},  # Qwen3-4B
}  # fmt: skip


def _learner_bench() -> Any:
    """bench/learner.py, whose prompts and episode records this run shares (loaded by path: its
    module name would shadow the `learner` package)."""
    spec = importlib.util.spec_from_file_location("bench_learner", ROOT / "bench" / "learner.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


BENCH = _learner_bench()


@dataclass(frozen=True)
class Step:
    update_s: float
    generate_s: float  # generation and scoring, before the update
    tokens: int
    peak_bytes: int  # during the update


def reward(ids: list[int]) -> float:
    """A hash of the completion's tokens in [0, 1): varies within every group."""
    return zlib.crc32(str(ids).encode()) % 1000 / 1000


# Models -------------------------------------------------------------------------------------


def make_config(size: str, tokenizer: Any) -> Any:
    from transformers import Qwen2Config, Qwen3Config

    fields = dict(SHAPES[size])
    config_class = {"qwen2": Qwen2Config, "qwen3": Qwen3Config}[fields.pop("architecture")]
    return config_class(
        **fields,
        tie_word_embeddings=True,  # as in the Qwen models of these sizes
        max_position_embeddings=32768,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )


def build_model(directory: Path, size: str, device: torch.device, dtype: torch.dtype) -> Path:
    """A model directory of `size`'s shape with random weights (seed 0), initialised on `device`."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    from runtime.executor.tiny import build_tokenizer

    tokenizer = build_tokenizer()
    torch.manual_seed(0)
    with device:
        model = AutoModelForCausalLM.from_config(make_config(size, tokenizer), dtype=dtype)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, do_sample=True
    )
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def build_shapes_only(directory: Path, size: str) -> Path:
    """`size`'s config.json and a safetensors file of the right shapes, all zeros and sparse:
    what learner/memory_estimate.py reads, without writing gigabytes."""
    import torch
    from transformers import AutoModelForCausalLM

    from runtime.executor.tiny import build_tokenizer

    config = make_config(size, build_tokenizer())
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    header: dict[str, Any] = {}
    offset = 0
    for name, parameter in model.named_parameters():  # a tied weight once
        size_bytes = parameter.numel() * 2
        header[name] = {
            "dtype": "BF16",
            "shape": list(parameter.shape),
            "data_offsets": [offset, offset + size_bytes],
        }
        offset += size_bytes
    directory.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(directory)
    encoded = json.dumps(header).encode()
    with (directory / "model.safetensors").open("wb") as stream:
        stream.write(len(encoded).to_bytes(8, "little") + encoded)
        stream.truncate(8 + len(encoded) + offset)  # the weights: a hole of zeros
    return directory


def parameter_count(model_dir: Path) -> int:
    from learner.memory_estimate import weight_shapes

    return sum(math.prod(shape) for shape in weight_shapes(model_dir).values())


# Measuring ----------------------------------------------------------------------------------


def synchronise(device: torch.device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reset_peak(device: torch.device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_bytes(device: torch.device) -> int:
    import torch

    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


def release(device: torch.device) -> None:
    import torch

    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


# Ours ---------------------------------------------------------------------------------------


def ours_steps(
    model_dir: Path, args: argparse.Namespace, device: torch.device, dtype: torch.dtype
) -> list[Step]:
    """Sample through the replay's path (every attempt asks one `GroupBatcher`, answered with one
    batch from the policy being trained), score, `build_rows`, `GRPOTrainer.step` (timed)."""
    from learner.batching import GroupBatcher
    from learner.policy import LoraSettings
    from learner.rows import RowSettings, build_rows
    from learner.train import GRPOTrainer, TrainSettings
    from runtime.executor.completion import SamplingParams
    from runtime.executor.local_backend import LocalBackend
    from runtime.executor.local_model import LocalModel

    lora = LoraSettings(rank=args.lora_rank, alpha=2 * args.lora_rank, target_modules=LORA_MODULES)
    settings = TrainSettings(lora=lora, learning_rate=LEARNING_RATE, epsilon_high=0.2, checkpoint_every=0)
    dtype_name = str(dtype).removeprefix("torch.")
    trainer = GRPOTrainer(LocalModel.load(model_dir, device=str(device), dtype=dtype_name), settings)
    rows = RowSettings(normalisation="token", mask_truncated=False)
    backend = LocalBackend(trainer.policy.sampler)  # the live weights
    prompts = BENCH.make_prompts(args.prompts)

    async def generate(first_seed: int) -> list[Completion]:
        batcher = GroupBatcher(backend)

        async def attempt(messages: list[dict[str, str]], seed: int) -> Completion:
            async with batcher.attempt():
                sampling = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=args.max_tokens, seed=seed)
                return await batcher.complete(messages, sampling)

        seeds = range(first_seed, first_seed + len(prompts) * args.group)
        return await asyncio.gather(
            *(attempt(prompts[i // args.group].messages, s) for i, s in enumerate(seeds))
        )

    steps = []
    for number in range(args.steps + 1):
        began = time.perf_counter()
        completions = asyncio.run(generate(number * len(prompts) * args.group))
        trajectories = [
            BENCH._trajectory(n, f"p{n // args.group}", c, reward(c.completion_ids))
            for n, c in enumerate(completions)
        ]
        batch = build_rows(trajectories, rows)
        synchronise(device)
        reset_peak(device)
        updating = time.perf_counter()
        trainer.step(batch)
        synchronise(device)
        done = time.perf_counter()
        steps.append(Step(done - updating, updating - began, batch.stats.tokens, peak_bytes(device)))
    return steps[1:]  # the first one warms up


# trl ----------------------------------------------------------------------------------------


def trl_steps(
    model_dir: Path, args: argparse.Namespace, device: torch.device, dtype: torch.dtype
) -> list[Step]:
    """trl's steps; a step's update is its time less `_generate_and_score_completions`'s."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    class Clock(TrainerCallback):
        def __init__(self) -> None:
            self.started = self.generating = 0.0
            self.tokens_before = 0
            self.steps: list[Step] = []

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            synchronise(device)
            self.generating, self.tokens_before = 0.0, state.num_input_tokens_seen
            self.started = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            synchronise(device)
            total = time.perf_counter() - self.started
            tokens = int(state.num_input_tokens_seen - self.tokens_before)
            self.steps.append(Step(total - self.generating, self.generating, tokens, peak_bytes(device)))

    def scored(completion_ids: list[list[int]], **_: Any) -> list[float | None]:
        return [reward(list(ids)) for ids in completion_ids]

    clock = Clock()
    prompts = BENCH.make_prompts(args.prompts)
    with tempfile.TemporaryDirectory() as output:
        config = GRPOConfig(
            output_dir=output, use_cpu=device.type == "cpu", seed=0, data_seed=0,
            per_device_train_batch_size=len(prompts) * args.group, num_generations=args.group,
            gradient_accumulation_steps=1, steps_per_generation=1, num_iterations=1,
            max_completion_length=args.max_tokens, temperature=1.0, top_p=1.0,
            learning_rate=LEARNING_RATE, beta=0.0, loss_type="dapo", max_grad_norm=1.0,
            max_steps=args.steps + 1, gradient_checkpointing=False, bf16=dtype == torch.bfloat16,
            logging_steps=1, report_to="none", save_strategy="no", disable_tqdm=True,
            dataloader_num_workers=0,
        )  # fmt: skip
        trainer = GRPOTrainer(
            model=AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype),
            reward_funcs=scored,
            args=config,
            train_dataset=Dataset.from_list([{"prompt": p.messages} for p in prompts]),
            processing_class=AutoTokenizer.from_pretrained(model_dir),
            peft_config=LoraConfig(
                r=args.lora_rank, lora_alpha=2 * args.lora_rank, target_modules=LORA_MODULES
            ),
            callbacks=[clock],
        )
        trainer.remove_callback(PrinterCallback)  # its log dict per step would bury the figures
        generate = trainer._generate_and_score_completions  # wrapped: trl has no hook around it

        def timed(*call_args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            result = generate(*call_args, **kwargs)
            synchronise(device)
            clock.generating += time.perf_counter() - began
            reset_peak(device)  # from here on, the update's
            return result

        trainer._generate_and_score_completions = timed  # type: ignore[method-assign]
        trainer.train()
    return clock.steps[1:]  # the first one warms up


# Report -------------------------------------------------------------------------------------


def peak_flops(args: argparse.Namespace, device: torch.device) -> tuple[float | None, str]:
    """Peak bf16 FLOP/s and where the figure came from."""
    import torch

    if args.peak_tflops is not None:
        return args.peak_tflops * 1e12, f"{args.peak_tflops:g} TFLOP/s from --peak-tflops"
    if device.type != "cuda":
        return None, "no peak FLOP/s for cpu: pass --peak-tflops"
    name = torch.cuda.get_device_name(device)
    for key, tflops in PEAK_TFLOPS:
        if key in name:
            return tflops * 1e12, f"{tflops:g} TFLOP/s bf16 dense for {name}"
    return None, f"no peak FLOP/s known for {name}: pass --peak-tflops"


def summarise(side: str, size: str, steps: list[Step], parameters: int, peak: float | None) -> float:
    """Print one side's figures for one size; return its tokens/s."""
    update = statistics.median(s.update_s for s in steps)
    tokens = statistics.median(s.tokens for s in steps)
    rate = tokens / update
    target = "; target >= 30%" if side == "ours" else ""
    print(f"{side}_update_s[{size}]: {update:.3f} (median of {len(steps)}, {tokens:,.0f} tokens)")
    print(
        f"{side}_generation_s[{size}]: {statistics.median(s.generate_s for s in steps):.3f} (not in the update)"
    )
    print(f"{side}_tokens_per_s[{size}]: {rate:,.0f}")
    if peak is None:
        print(f"{side}_mfu[{size}]: n/a (no peak FLOP/s)")
    else:
        mfu = rate * 6 * parameters / peak
        print(f"{side}_mfu[{size}]: {mfu:.1%} (6N{target}; by LoRA's ~4N matmul work {mfu * 4 / 6:.1%})")
    print(f"{side}_peak_memory_gib[{size}]: {max(s.peak_bytes for s in steps) / GIB:.2f}")
    return rate


def measure(
    side: str, size: str, run: Any, model_dir: Path, args: argparse.Namespace, device: torch.device,
    dtype: torch.dtype, parameters: int, peak: float | None,
) -> float | None:  # fmt: skip
    """Run one side and print its figures; its tokens/s, or None when it ran out of memory (the
    run goes on: one prepared run on a lent GPU should bring back every figure it can)."""
    import torch

    try:
        steps = run(model_dir, args, device, dtype)
    except torch.OutOfMemoryError as exc:
        steps, failure = [], str(exc).splitlines()[0]
    release(device)  # the side's models are garbage once `run` has returned (or raised)
    if not steps:
        print(f"{side}_tokens_per_s[{size}]: out of memory ({failure})")
        return None
    return summarise(side, size, steps, parameters, peak)


def estimate_4b(args: argparse.Namespace, device: torch.device, directory: Path) -> None:
    """learner/memory_estimate.py's estimate of a nightly cycle on Qwen3-4B's shape, bf16."""
    from learner.cycle import CycleSettings
    from learner.memory_estimate import GIB, HEADROOM, estimate_cycle, free_memory

    estimate = estimate_cycle(
        build_shapes_only(directory, "4b"), CycleSettings(device=str(device), dtype="bfloat16")
    )
    free = free_memory(estimate.device)
    print(f"memory_estimate_4b_gib: {estimate.peak / GIB:.2f} ({estimate.line()})")
    if free is None:
        print("memory_estimate_4b_fits: unknown (the free memory cannot be read here)")
        return
    verdict = "yes" if estimate.refusal(free) is None else "no"
    print(
        f"memory_estimate_4b_fits: {verdict} ({estimate.peak / GIB:.2f} GiB needed, {free / GIB:.2f} GiB free "
        f"on {device}, {HEADROOM:.0%} of it usable)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--sizes", default="0.5b,1.5b", help="comma-separated: 0.5b, 1.5b")
    parser.add_argument("--steps", type=int, default=3, help="timed steps a side, after one warm-up")
    parser.add_argument(
        "--tiny", action="store_true", help="a tiny Qwen2 and small batches: the CPU smoke run"
    )
    parser.add_argument("--prompts", type=int, help="P (default 4; 2 with --tiny)")
    parser.add_argument("--group", type=int, help="G: completions per prompt (default 8; 2 with --tiny)")
    parser.add_argument("--max-tokens", type=int, help="completion length (default 256; 8 with --tiny)")
    parser.add_argument("--lora-rank", type=int, default=8)
    parser.add_argument("--peak-tflops", type=float, help="the device's peak bf16 TFLOP/s, for MFU")
    args = parser.parse_args()
    args.prompts = args.prompts or (2 if args.tiny else 4)
    args.group = args.group or (2 if args.tiny else 8)
    args.max_tokens = args.max_tokens or (8 if args.tiny else 256)
    sizes = ["tiny"] if args.tiny else [s.strip() for s in args.sizes.split(",")]
    unknown = [s for s in sizes if s not in ("0.5b", "1.5b", "tiny")]
    if unknown:
        parser.error(f"unknown sizes {unknown}: use 0.5b and 1.5b (or --tiny)")

    import torch
    from transformers.utils import logging as transformers_logging

    from runtime.executor.local_model import resolve_device

    warnings.filterwarnings("ignore", category=FutureWarning)  # transformers 5 renames, for trl
    warnings.filterwarnings("ignore", category=UserWarning)
    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()
    device = resolve_device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32  # LocalModel's "auto"
    peak, peak_source = peak_flops(args, device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(
        f"device: {name}, torch {torch.__version__}, {str(dtype).removeprefix('torch.')}; peak {peak_source}"
    )
    print(
        f"setup: P={args.prompts} prompts x G={args.group}, {args.max_tokens} completion tokens, "
        f"LoRA r={args.lora_rank} alpha={2 * args.lora_rank} {LORA_MODULES}, {args.steps} timed steps a side"
    )
    with tempfile.TemporaryDirectory() as tmp:
        estimate_4b(args, device, Path(tmp) / "4b")
        for size in sizes:
            began = time.perf_counter()
            model_dir = build_model(Path(tmp) / size, size, device, dtype)
            parameters = parameter_count(model_dir)
            print(f"model[{size}]: Qwen2 from a config, {parameters / 1e6:,.1f}M parameters")
            ours = measure("ours", size, ours_steps, model_dir, args, device, dtype, parameters, peak)
            if importlib.util.find_spec("trl") is None:
                print("trl: not installed (pip install 'temper[bench]'): our side alone, no ratio")
            else:
                trl = measure("trl", size, trl_steps, model_dir, args, device, dtype, parameters, peak)
                ratio = (
                    "n/a (a side ran out of memory)" if ours is None or trl is None else f"{ours / trl:.2f}x"
                )
                print(f"tokens_per_s_ratio_vs_trl[{size}]: {ratio} (target >= 1.5x)")
            print(f"seconds[{size}]: {time.perf_counter() - began:.0f}")


if __name__ == "__main__":
    main()
