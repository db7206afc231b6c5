"""The model being trained: a Hugging Face causal LM with a trainable LoRA adapter, or all of its
weights trainable (full fine-tuning).

    policy = TrainablePolicy.create(local_model, LoraSettings())   # a copy, from its directory
    policy = TrainablePolicy.create(hf_model, None)                 # full, trained in place
    policy.sampler                 # a LocalModel over the live weights: sample between steps
    policy.save_adapter(directory) # PEFT format, what LocalModel.load_adapter / vLLM read
    policy.save_model(directory)   # a full model directory (LoRA merged in), with its tokenizer

Invariants:
- Given a `LocalModel`, the policy loads its own copy of the weights from the model's directory
  (`LocalModel.name`); the `LocalModel` itself is never changed, so it keeps serving whatever
  adapters it has. Given a bare `PreTrainedModel`, that module is trained in place.
- The module stays in eval mode: no dropout, so a token's log-probability is the same whether
  the sampler or the trainer computes it.
- `sampler` shares the weights, so it samples from the policy as trained so far. It is for
  sampling only (load no adapters into it), and must not be used while a step runs.
- The reference policy (for the KL term) is the base model with the adapter disabled, or, in
  full fine-tuning, a frozen copy of the starting weights made at creation (`keep_reference`).
- The copy has the `LocalModel`'s dtype and attention implementation (float32 unless the
  executor was loaded otherwise: training in half precision on CPU is slower and less exact;
  on CUDA, bfloat16 base weights under a LoRA adapter that peft keeps in float32).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from runtime.executor.local_model import LocalModel
from runtime.executor.tokenization import ExecutorTokenizer

if TYPE_CHECKING:
    from transformers import PreTrainedModel


@dataclass(frozen=True)
class LoraSettings:
    rank: int = 8
    alpha: float = 16.0
    target_modules: str | tuple[str, ...] = "all-linear"  # peft's: every linear layer but the head
    dropout: float = 0.0  # > 0 makes the trainer's logprobs differ from the sampler's

    def __post_init__(self) -> None:
        if self.rank < 1:
            raise ValueError(f"LoRA rank must be at least 1; got {self.rank}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"LoRA dropout must be in [0, 1); got {self.dropout}")


class TrainablePolicy:
    """See the module docstring. `module` is the peft `PeftModel` (LoRA) or the causal LM."""

    def __init__(
        self,
        module: torch.nn.Module,
        *,
        lora: bool,
        tokenizer: ExecutorTokenizer | None,
        name: str,
        reference: torch.nn.Module | None = None,
    ) -> None:
        self.module: Any = module.eval()  # a transformers or peft model: its methods are untyped
        self.lora = lora
        self.tokenizer = tokenizer
        self.name = name
        self.device = next(module.parameters()).device
        self._reference = reference
        self._sampler: LocalModel | None = None

    @classmethod
    def create(
        cls,
        model: LocalModel | PreTrainedModel,
        lora: LoraSettings | None,
        *,
        start_adapter: str | Path | None = None,
        tokenizer: ExecutorTokenizer | None = None,
        keep_reference: bool = False,
        seed: int = 0,
    ) -> TrainablePolicy:
        """`model`: a `LocalModel` (copied) or a `PreTrainedModel` (trained in place).
        `start_adapter`: a PEFT adapter directory to continue training (its own rank and target
        modules win over `lora`'s). `keep_reference`: keep a frozen copy of the starting weights
        for a KL term in full fine-tuning (LoRA needs none)."""
        if isinstance(model, LocalModel):
            base, name = _load_copy(model), model.name
            tokenizer = tokenizer or model.tokenizer
        else:
            base, name = model, getattr(model, "name_or_path", type(model).__name__)
        if lora is None:
            if start_adapter is not None:
                raise ValueError("start_adapter needs LoRA training: give LoraSettings")
            reference = copy.deepcopy(base).requires_grad_(False).eval() if keep_reference else None
            return cls(
                base.requires_grad_(True), lora=False, tokenizer=tokenizer, name=name, reference=reference
            )
        return cls(_with_lora(base, lora, start_adapter, seed), lora=True, tokenizer=tokenizer, name=name)

    # Parameters -------------------------------------------------------------------------------

    def named_trainable(self) -> dict[str, torch.nn.Parameter]:
        return {n: p for n, p in self.module.named_parameters() if p.requires_grad}

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return list(self.named_trainable().values())

    @contextmanager
    def reference(self) -> Iterator[torch.nn.Module]:
        """The reference policy, to run under `torch.no_grad()`."""
        if self.lora:
            with self.module.disable_adapter():
                yield self.module
        elif self._reference is not None:
            yield self._reference
        else:
            raise ValueError("no reference policy: full fine-tuning with a KL term needs keep_reference=True")

    # Handing the weights back -----------------------------------------------------------------

    @property
    def sampler(self) -> LocalModel:
        """A `LocalModel` over the live weights (the same object every time); sample with
        `adapter=None`, which here means the policy being trained."""
        if self.tokenizer is None:
            raise ValueError("this policy has no tokenizer: create it with tokenizer=...")
        if self._sampler is None:
            self._sampler = LocalModel(
                self.module, self.tokenizer, name=f"{self.name}+training", device=self.device
            )
        return self._sampler

    def save_adapter(self, directory: str | Path) -> Path:
        """The LoRA adapter in PEFT format (adapter_config.json, adapter_model.safetensors)."""
        if not self.lora:
            raise ValueError("full fine-tuning has no adapter: use save_model")
        path = Path(directory)
        self.module.save_pretrained(path)
        return path

    def save_model(self, directory: str | Path) -> Path:
        """A full model directory (weights, config, tokenizer) that `LocalModel.load` reads; a
        LoRA adapter is merged into a copy of the base, the policy itself is left as it is."""
        path = Path(directory)
        module = copy.deepcopy(self.module).merge_and_unload() if self.lora else self.module
        module.save_pretrained(path)
        if self.tokenizer is not None:
            self.tokenizer.hf.save_pretrained(path)
        return path


def _load_copy(model: LocalModel) -> Any:
    from transformers import AutoModelForCausalLM

    extra = {} if model.attn_implementation is None else {"attn_implementation": model.attn_implementation}
    base: Any = AutoModelForCausalLM.from_pretrained(model.name, dtype=model.dtype, **extra)
    return base.to(model.device)


def _with_lora(base: Any, lora: LoraSettings, start_adapter: str | Path | None, seed: int) -> Any:
    from peft import LoraConfig, PeftModel, get_peft_model

    if start_adapter is not None:
        return PeftModel.from_pretrained(base, Path(start_adapter), is_trainable=True)
    targets = lora.target_modules if isinstance(lora.target_modules, str) else list(lora.target_modules)
    config = LoraConfig(
        r=lora.rank,
        lora_alpha=lora.alpha,  # type: ignore[arg-type]  # peft's annotation says int; a float scales alike
        lora_dropout=lora.dropout,
        target_modules=targets,
    )
    with torch.random.fork_rng(devices=[]):  # A's random init, reproducible, global RNG untouched
        torch.manual_seed(seed)
        return get_peft_model(base, config)
