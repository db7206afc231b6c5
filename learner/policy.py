"""The model being trained: a Hugging Face causal LM with a trainable LoRA adapter, or all of its
weights trainable (full fine-tuning).

    policy = TrainablePolicy.create(local_model, LoraSettings())   # an adapter on its weights
    policy = TrainablePolicy.create(hf_model, None)                 # full, trained in place
    policy.sampler                 # a LocalModel over the live weights: sample between steps
    policy.save_adapter(directory) # PEFT format, what LocalModel.load_adapter / vLLM read
    policy.save_model(directory)   # a full model directory (LoRA merged in), with its tokenizer
    policy.close()                 # the adapter out of the LocalModel again

One copy of the base weights (LoRA): given a `LocalModel`, the policy is an adapter of its own
on that model's weights (`LocalModel.add_trainable_adapter`), beside whatever adapters it
serves: the version in service that a learning cycle's gate compares with is another adapter on
the same peft model, the reference policy is the same module with its adapters disabled, and
the old policy is the captured logprobs. Two policies on one `LocalModel` are two adapters
(`policy`, `policy-2`, ...), trained apart. Each use of `module` makes the policy's adapter
the active one again, gradients on, since serving another adapter switches it.

Full fine-tuning costs copies: given a `LocalModel`, the policy loads its own copy of the weights
from the model's directory (`LocalModel.name`; the `LocalModel` keeps serving as it was), and a
KL term keeps a frozen copy of the starting weights besides (`keep_reference`).

Invariants:
- The module stays in eval mode: no dropout, so a token's log-probability is the same whether
  the sampler or the trainer computes it. With gradient checkpointing, only the decoder layers'
  own `training` flag is set (transformers checkpoints a layer only in training mode; the flag
  of their children, which turns on dropout, stays off).
- `sampler` shares the weights, so it samples from the policy as trained so far; with
  `adapter=None` it means the policy's adapter. It must not be used while a step runs, nor may
  the `LocalModel` the adapter sits on serve then.
- The copy (full fine-tuning) has the `LocalModel`'s dtype and attention implementation; an
  adapter computes in the `LocalModel`'s (peft keeps the adapter's own weights in float32).
- A policy's parameter names are peft's with the adapter named "default", whatever its name on
  the `LocalModel`: checkpoints (learner/checkpoint.py) do not depend on it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch

from runtime.executor.local_model import LocalModel
from runtime.executor.sampling import base_model
from runtime.executor.tokenization import ExecutorTokenizer

if TYPE_CHECKING:
    from transformers import PreTrainedModel

TRAINING = "policy"  # the adapter's name on a LocalModel (policy-2, ... when taken; not "training",
# which torch modules already have as an attribute)
DEFAULT = "default"  # peft's name for a model's only adapter: what checkpoints call every adapter


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
    """See the module docstring. `module` is the peft `PeftModel` (LoRA) or the causal LM;
    `adapter` the trained adapter's name on it (None: full fine-tuning)."""

    def __init__(
        self,
        module: torch.nn.Module,
        *,
        adapter: str | None,
        tokenizer: ExecutorTokenizer | None,
        name: str,
        reference: torch.nn.Module | None = None,
        host: LocalModel | None = None,
        gradient_checkpointing: bool = False,
    ) -> None:
        self._module: Any = cast(Any, module.eval())  # transformers or peft: their methods are untyped
        self.adapter = adapter
        self.tokenizer = tokenizer
        self.name = name
        self.device = next(module.parameters()).device
        self._reference = reference
        self._host = host  # the LocalModel the adapter sits on (None: the policy owns its module)
        self._sampler: LocalModel | None = None
        self._layers = _decoder_layers(module)
        self._checkpointing = gradient_checkpointing
        if gradient_checkpointing:
            _enable_checkpointing(module, self._layers)
        if adapter is not None:
            self._module.set_adapter(adapter)  # peft: its parameters train, the others' do not
        # A trained parameter: when it no longer requires gradients, another adapter was made active.
        self._first = next(p for p in module.parameters() if p.requires_grad)

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
        gradient_checkpointing: bool = False,
    ) -> TrainablePolicy:
        """`model`: a `LocalModel` (an adapter on its weights; full fine-tuning: a copy) or a
        `PreTrainedModel` (trained in place). `start_adapter`: a PEFT adapter directory to
        continue training (its own rank and target modules win over `lora`'s). `keep_reference`:
        keep a frozen copy of the starting weights for a KL term in full fine-tuning (LoRA needs
        none). `gradient_checkpointing`: recompute each decoder layer in the backward pass."""
        host = model if isinstance(model, LocalModel) else None
        name = model.name if host is not None else getattr(model, "name_or_path", type(model).__name__)
        tokenizer = tokenizer or (host.tokenizer if host is not None else None)
        options: dict[str, Any] = {"tokenizer": tokenizer, "name": name}
        options["gradient_checkpointing"] = gradient_checkpointing
        if lora is None:
            if start_adapter is not None:
                raise ValueError("start_adapter needs LoRA training: give LoraSettings")
            base: Any = _load_copy(host) if host is not None else model
            reference = copy.deepcopy(base).requires_grad_(False).eval() if keep_reference else None
            return cls(base.requires_grad_(True), adapter=None, reference=reference, **options)
        with torch.random.fork_rng(devices=[]):  # A's random init, reproducible, global RNG untouched
            torch.manual_seed(seed)
            if host is not None:
                taken = host.adapters
                adapter = next(n for n in _names() if n not in taken)
                module = host.add_trainable_adapter(adapter, _lora_config(lora), directory=start_adapter)
                return cls(module, adapter=adapter, host=host, **options)
            return cls(_with_lora(model, lora, start_adapter), adapter=DEFAULT, **options)

    @property
    def lora(self) -> bool:
        return self.adapter is not None

    @property
    def module(self) -> Any:
        """The module to compute with: the policy's adapter active, its gradients on."""
        if self.adapter is not None and (
            self._module.active_adapter != self.adapter or not self._first.requires_grad
        ):
            self._module.set_adapter(self.adapter)  # the others' gradients off, the base's stay off
        for layer in self._layers:  # another policy on the model may have set them; eval() unsets them
            layer.training = self._checkpointing
        return self._module

    # Parameters -------------------------------------------------------------------------------

    def named_trainable(self) -> dict[str, torch.nn.Parameter]:
        module = self.module
        if self.adapter is None:
            return {n: p for n, p in module.named_parameters() if p.requires_grad}
        own, default = f".{self.adapter}.", f".{DEFAULT}."
        return {n.replace(own, default): p for n, p in module.named_parameters() if own in n}

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return list(self.named_trainable().values())

    @contextmanager
    def reference(self) -> Iterator[torch.nn.Module]:
        """The reference policy, to run under `torch.no_grad()`."""
        if self.adapter is not None:
            with self.module.disable_adapter():
                yield self._module
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
            name = f"{self.name}+training"
            if self._host is not None and self.adapter is not None:
                self._sampler = self._host.pinned(self.adapter, name=name)
            else:
                self._sampler = LocalModel(self.module, self.tokenizer, name=name, device=self.device)
        return self._sampler

    def save_adapter(self, directory: str | Path) -> Path:
        """The LoRA adapter in PEFT format (adapter_config.json, adapter_model.safetensors)."""
        if self.adapter is None:
            raise ValueError("full fine-tuning has no adapter: use save_model")
        path = Path(directory)
        self.module.save_pretrained(path, selected_adapters=[self.adapter])
        if self.adapter != DEFAULT:  # peft writes any other adapter into a folder of its name
            nested = path / self.adapter
            for file in nested.iterdir():
                file.replace(path / file.name)
            nested.rmdir()
        return path

    def save_model(self, directory: str | Path) -> Path:
        """A full model directory (weights, config, tokenizer) that `LocalModel.load` reads; a
        LoRA adapter is merged into a copy of the base, the policy itself is left as it is."""
        path = Path(directory)
        if self.adapter is not None:
            module = copy.deepcopy(self.module).merge_and_unload(adapter_names=[self.adapter])
        else:
            module = self.module
        module.save_pretrained(path)
        if self.tokenizer is not None:
            self.tokenizer.hf.save_pretrained(path)
        return path

    def close(self) -> None:
        """Take the adapter out of the `LocalModel` it sits on, and gradient checkpointing off it,
        which then computes as before the policy came. The policy is not to be used after."""
        if self._checkpointing:
            model = base_model(self._module)
            if hasattr(model, "activation_checkpointing_disable"):  # as in _enable_checkpointing
                model.activation_checkpointing_disable()
            else:
                model.gradient_checkpointing_disable()
        for layer in self._layers:
            layer.training = False
        if self._host is not None and self.adapter in self._host.adapters:
            self._host.unload_adapter(self.adapter)
        self._sampler = None


def _names() -> Iterator[str]:
    yield TRAINING
    count = 2
    while True:
        yield f"{TRAINING}-{count}"
        count += 1


def _load_copy(model: LocalModel) -> Any:
    from transformers import AutoModelForCausalLM

    extra = {} if model.attn_implementation is None else {"attn_implementation": model.attn_implementation}
    base: Any = AutoModelForCausalLM.from_pretrained(model.name, dtype=model.dtype, **extra)
    return base.to(model.device)


def _lora_config(lora: LoraSettings) -> Any:
    from peft import LoraConfig

    targets = lora.target_modules if isinstance(lora.target_modules, str) else list(lora.target_modules)
    return LoraConfig(
        r=lora.rank,
        lora_alpha=lora.alpha,  # type: ignore[arg-type]  # peft's annotation says int; a float scales alike
        lora_dropout=lora.dropout,
        target_modules=targets,
    )


def _with_lora(base: Any, lora: LoraSettings, start_adapter: str | Path | None) -> Any:
    from peft import PeftModel, get_peft_model

    if start_adapter is not None:
        return PeftModel.from_pretrained(base, Path(start_adapter), is_trainable=True)
    return get_peft_model(base, _lora_config(lora))


def _decoder_layers(module: torch.nn.Module) -> list[torch.nn.Module]:
    """The layers transformers can checkpoint (its decoder layers)."""
    from transformers.modeling_layers import GradientCheckpointingLayer

    return [m for m in module.modules() if isinstance(m, GradientCheckpointingLayer)]


def _enable_checkpointing(module: torch.nn.Module, layers: list[torch.nn.Module]) -> None:
    """Turn on transformers' activation checkpointing, non-reentrant (the inputs need not require
    gradients): only the boundaries between decoder layers are kept for the backward pass, each
    layer's inside is computed again there. It acts on a layer only while its `training` flag is
    set (`module` sets it)."""
    model = base_model(module)
    if not layers:
        raise ValueError(f"{type(model).__name__} has no layers transformers can checkpoint")
    options = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5.2x; the old name warns
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=options)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=options)
