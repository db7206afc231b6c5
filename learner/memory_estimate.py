"""Before a cycle: how much memory it will need at its peak, and whether the device has it.

    estimate = estimate_cycle(model_dir, cycle_settings)   # reads config.json and weight headers
    say(estimate.line())                                    # the parts, in GiB
    problem = estimate.refusal(free_memory(estimate.device))  # None, or why it cannot fit

Nothing is loaded: the parameter shapes come from the safetensors headers (exact), the rest from
`config.json` and the cycle's settings. The parts, in bytes:

- weights: parameters x bytes of the load dtype, once: `run_cycle` holds one copy, the policy
  being trained and the version in service being two adapters on it and the reference policy
  the same model with its adapters disabled (learner/policy.py).
- adapter and optimizer: LoRA's trainable parameters, r x (in + out) for each wrapped linear
  layer, in float32 (peft keeps adapters there), each with its gradient and AdamW's two moments,
  and the version in service's adapter beside it (taken to be of the same shape): 20 bytes a
  parameter.
- activations: what backward keeps for one micro-batch of `rows.token_budget` positions. Without
  gradient checkpointing, per layer and token `4h + 2q + 2kv + 4i` values of the load dtype
  (h hidden size, q = heads x
  head_dim, kv = key-value heads x head_dim, i the MLP's intermediate size): the inputs of the
  two norms, of the q/k/v projections, q, k, v, the attention output, the MLP's input, its gate
  and up outputs, the activation and the down projection's input. It is the per-layer count of
  Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models" (2022,
  section 4.1: 34sbh bytes in 16 bits), with no dropout masks, no s x s attention scores (SDPA and
  flash kernels do not keep them), grouped-query k and v, and a gated MLP instead of a 4h GeLU
  one. With `train.gradient_checkpointing`, only each layer's input (h values a token and layer)
  is kept, and one layer's inside at a time while backward recomputes it. With either, one chunk
  of logits (learner/logprobs.py): `logprob_chunk_tokens` x vocabulary float32 values, three
  times (logits, log-softmax, its gradient).
- key-value cache: sampling keeps 2 x layers x kv values a token for every sequence replayed at
  once (`concurrent_tasks` x `group_size`), each up to `rows.max_row_tokens` long.

Training and sampling take turns, so the peak is weights + adapter and optimizer + the larger of
activations and key-value cache. It is an estimate: allocator slack, CUDA's context (about half
a GiB) and framework buffers come on top, which is why the refusal keeps a 10% margin.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from learner.cycle import CycleSettings
from learner.policy import LoraSettings
from runtime.executor.local_model import resolve_device, resolve_dtype

GIB = 1 << 30
HEADROOM = 0.9  # of the free memory, what the estimate may use
ADAM_BYTES = 4 * 4  # float32 parameter, gradient and AdamW's two moments
IN_SERVICE_BYTES = 4  # the version in service's adapter, float32, beside the one being trained
LOGIT_COPIES = 3  # a logits chunk, its log-softmax and the gradient


class EstimateError(Exception):
    """The model directory does not say what the estimate needs (no config.json or weights)."""


@dataclass(frozen=True)
class MemoryEstimate:
    device: torch.device
    dtype: torch.dtype
    parameters: int
    weight_copies: int
    trainable: int  # LoRA parameters
    weights: int  # bytes, all copies
    adapter_and_optimizer: int
    activations: int
    kv_cache: int
    gradient_checkpointing: bool = False

    @property
    def peak(self) -> int:
        return self.weights + self.adapter_and_optimizer + max(self.activations, self.kv_cache)

    def line(self) -> str:
        return (
            f"memory estimate on {self.device} ({str(self.dtype).removeprefix('torch.')}): "
            f"peak {_size(self.peak)} = weights {_size(self.weights)} "
            f"({_count(self.parameters)} parameters x {self.weight_copies} "
            f"{'copy' if self.weight_copies == 1 else 'copies'}) "
            f"+ adapter and optimizer {_size(self.adapter_and_optimizer)} "
            f"({_count(self.trainable)} trainable) + the larger of activations {_size(self.activations)} "
            f"and key-value cache {_size(self.kv_cache)}"
        )

    def refusal(self, free: int | None) -> str | None:
        """Why the cycle cannot run with `free` bytes on its device (None: it fits, or the free
        memory is unknown)."""
        if free is None or self.peak <= free * HEADROOM:
            return None
        if self.activations >= self.kv_cache:  # what lowers the larger of the two
            checkpointing = (
                "" if self.gradient_checkpointing else "set [learner] gradient_checkpointing = true, "
            )
            larger = f"{checkpointing}lower [learner] micro_batch_tokens (the activations)"
        else:
            larger = "lower [learner] max_prompt_tokens or max_completion_tokens (the key-value cache)"
        return (
            f"this cycle needs about {_size(self.peak)} on {self.device} but {_size(free)} is free "
            f"({self.line()}): free memory, {larger}, lower lora_rank, "
            f"or load the executor in a smaller [executor] dtype"
        )


def estimate_cycle(model_dir: Path, settings: CycleSettings, *, weight_copies: int = 1) -> MemoryEstimate:
    """The peak memory of `run_cycle(model_dir, ..., settings)`; see the module docstring."""
    config = _read_config(model_dir)
    shapes = weight_shapes(model_dir)
    device = resolve_device(settings.device)
    dtype = resolve_dtype(settings.dtype, device)
    size = torch.finfo(dtype).bits // 8
    parameters = sum(_numel(shape) for shape in shapes.values())
    lora = settings.train.lora or LoraSettings()
    trainable = lora_parameters(shapes, lora)
    text = config.get("text_config", config)  # multimodal configs nest the language model's
    hidden, layers = int(text["hidden_size"]), int(text["num_hidden_layers"])
    heads = int(text["num_attention_heads"])
    head_dim = int(text.get("head_dim") or hidden // heads)
    kv = int(text.get("num_key_value_heads") or heads) * head_dim
    intermediate = int(text.get("intermediate_size") or 4 * hidden)
    per_token = 4 * hidden + 2 * heads * head_dim + 2 * kv + 4 * intermediate  # one layer's inside
    kept = hidden * layers + per_token if settings.train.gradient_checkpointing else per_token * layers
    logits = settings.train.logprob_chunk_tokens * int(text["vocab_size"]) * 4 * LOGIT_COPIES
    sequences = max(
        replay.concurrent_tasks * replay.group_size for replay in (settings.replay, settings.evaluation)
    )
    return MemoryEstimate(
        device=device,
        dtype=dtype,
        parameters=parameters,
        weight_copies=weight_copies,
        trainable=trainable,
        weights=parameters * size * weight_copies,
        adapter_and_optimizer=trainable * (ADAM_BYTES + IN_SERVICE_BYTES),
        activations=settings.rows.token_budget * kept * size + logits,
        kv_cache=sequences * settings.rows.max_row_tokens * 2 * layers * kv * size,
        gradient_checkpointing=settings.train.gradient_checkpointing,
    )


def free_memory(device: torch.device) -> int | None:
    """Bytes free on `device`: CUDA's own count, or on CPU the kernel's MemAvailable (None where
    /proc/meminfo cannot be read)."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        lines = Path("/proc/meminfo").read_text(encoding="ascii").splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024  # kB
    return None


def weight_shapes(model_dir: Path) -> dict[str, tuple[int, ...]]:
    """Every stored tensor's shape, from the safetensors headers alone (tied weights are stored
    once, as the model holds them once)."""
    files = sorted(Path(model_dir).glob("*.safetensors"))
    if not files:
        raise EstimateError(f"{model_dir} has no .safetensors weights to estimate from")
    shapes: dict[str, tuple[int, ...]] = {}
    for file in files:
        with file.open("rb") as stream:
            (length,) = struct.unpack("<Q", stream.read(8))
            header: dict[str, Any] = json.loads(stream.read(length))
        header.pop("__metadata__", None)
        shapes.update({name: tuple(entry["shape"]) for name, entry in header.items()})
    return shapes


def lora_parameters(shapes: dict[str, tuple[int, ...]], lora: LoraSettings) -> int:
    """r x (in + out) for each linear layer LoRA wraps. "all-linear" is peft's rule: every
    linear layer but the output head; from shapes alone, every 2-D weight that is not an
    embedding or `lm_head`. Named modules match by their name's last parts, and a string other
    than "all-linear" as a regular expression over the whole name, as in peft."""
    total = 0
    for module, shape in _linear_modules(shapes).items():
        if lora.target_modules == "all-linear":
            wrapped = "embed" not in module and module.rsplit(".", 1)[-1] != "lm_head"
        elif isinstance(lora.target_modules, str):  # peft: a regular expression over the whole name
            wrapped = re.fullmatch(lora.target_modules, module) is not None
        else:
            wrapped = any(_named(module, target) for target in lora.target_modules)
        if wrapped:
            total += lora.rank * (shape[0] + shape[1])
    return total


def unmatched_targets(shapes: dict[str, tuple[int, ...]], lora: LoraSettings) -> tuple[list[str], list[str]]:
    """The named target modules that match no linear layer of the model, and the names its
    linear layers end in (to say what would match). peft refuses a list none of whose names
    match, and silently skips a misspelled one beside others that do; both are the user's typo.
    "all-linear" and a regular expression are peft's to judge: ([], [])."""
    if isinstance(lora.target_modules, str):
        return [], []
    modules = _linear_modules(shapes)
    missing = [target for target in lora.target_modules if not any(_named(m, target) for m in modules)]
    return missing, sorted({module.rsplit(".", 1)[-1] for module in modules})


def _linear_modules(shapes: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """Module name -> weight shape of every 2-D weight (the linear layers, embeddings and head)."""
    return {
        name.removesuffix(".weight"): shape
        for name, shape in shapes.items()
        if len(shape) == 2 and name.endswith(".weight")
    }


def _named(module: str, target: str) -> bool:
    """peft's match of a listed target: the module's whole name, or its last dotted parts."""
    return module == target or module.endswith(f".{target}")


def _read_config(model_dir: Path) -> dict[str, Any]:
    try:
        config: dict[str, Any] = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EstimateError(f"cannot read {model_dir}/config.json: {exc}") from None
    return config


def _numel(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


def _size(size: float) -> str:
    return f"{size / GIB:.2f} GiB" if size >= GIB else f"{size / (1 << 20):.1f} MiB"


def _count(count: int) -> str:
    return f"{count / 1e9:.2f}B" if count >= 1e9 else f"{count / 1e6:.2f}M"
