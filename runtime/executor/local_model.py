"""A Hugging Face causal LM in this process, with named PEFT LoRA adapters: the synchronous core
under `LocalBackend` and `temper serve executor`.

    model = LocalModel.load(directory, device="cpu")     # one torch thread on CPU by default
    model.load_adapter("v3", adapter_directory)          # PEFT format, as the learner writes it
    sample = model.sample(prompt_ids, SamplingParams(seed=1), adapter="v3")
    samples = model.sample_batch([prompt_a, prompt_b], SamplingParams(), seeds=[1, 2])  # one batch
    model.logprobs_of(prompt_ids, sample.ids, adapter="v3") == sample.logprobs   # within 1e-4

Invariants:
- One operation at a time: sampling, recomputing logprobs and loading or unloading adapters hold
  one lock, so threads (the server's, `asyncio.to_thread`'s) may call in freely. Reading which
  adapters are loaded does not wait for that lock (an event loop may ask while a sample runs).
- Each call names its adapter (`None`: the base model); nothing is "switched on" between calls.
  A view from `pinned(version)` reads `None` as that adapter instead (the learner's sampler).
- One copy of the base weights, whatever the adapters: served ones (`load_adapter`) and ones
  being trained (`add_trainable_adapter`, learner/policy.py) sit side by side on one peft model.
  A trainer computes outside the lock: nothing may sample while its step runs.
- Logprobs follow `sampling.py`'s convention: the raw model distribution, before temperature.
- A seed fixes a completion: the same prompt and seed give the same ids alone (`sample`), in a
  group (`sample_group`) or beside other prompts (`sample_batch`), batched arithmetic aside.
- Weights stay float32 unless a dtype is given: logprobs then agree between sampling (with the
  key-value cache) and teacher-forced recomputation to about 1e-6. `device="auto"` is cuda when
  torch sees a GPU, else cpu; `dtype="auto"` is float32 on CPU and bfloat16 on CUDA (float16 on
  GPUs without bfloat16). A CUDA device torch cannot see is refused at load, saying so.
- `max_tokens` is cut to what fits in the context; a prompt that leaves no room is refused.
- `SamplingParams(constrained=True)` keeps completions to the executor's action format
  (sampling.py, action_grammar.py).
"""

from __future__ import annotations

import copy
import secrets
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import torch

from runtime.executor.action_grammar import ActionConstraint
from runtime.executor.completion import SamplingParams
from runtime.executor.errors import ExecutorLoadError, ExecutorRequestError, model_dir_problem
from runtime.executor.sampling import (
    SampledTokens,
    sample_batch,
    teacher_forced_logprobs,
)
from runtime.executor.tokenization import ExecutorTokenizer


class LocalModel:
    """See the module docstring. `name` is what answers in records: the model directory."""

    def __init__(self, model: Any, tokenizer: ExecutorTokenizer, *, name: str, device: torch.device) -> None:
        self.name = name
        self.tokenizer = tokenizer
        self.device = device
        self.dtype: torch.dtype = model.dtype
        # what from_pretrained chose or was told ("sdpa", "eager", ...): a copy of the weights loads alike
        self.attn_implementation: str | None = getattr(model.config, "_attn_implementation", None)
        self._base = model.eval()
        self._peft: Any | None = None  # a peft.PeftModel around the base once an adapter is loaded
        self._adapters: dict[str, str] = {}  # version -> directory it came from
        self._lock = threading.Lock()
        self._pinned: str | None = None  # what adapter=None means: the base, or in a view its adapter
        config = model.config
        self.max_positions: int = getattr(config, "max_position_embeddings", None) or 1 << 31
        self.vocab_size: int = config.vocab_size
        self.stop_ids = frozenset(_eos_ids(model, tokenizer))
        self._constraint: ActionConstraint | None = None  # built on first constrained call

    @classmethod
    def load(
        cls,
        directory: str | Path,
        *,
        device: str = "cpu",
        dtype: str | None = None,
        threads: int | None = 1,
        attn_implementation: str | None = None,
    ) -> LocalModel:
        """Load a model directory (weights, config, tokenizer). `device`: "auto", "cpu", "cuda"
        or "cuda:N"; `dtype`: None (float32), "auto", or a torch dtype's name;
        `attn_implementation`: passed to `from_pretrained` (None: transformers' choice). On CPU,
        `threads` sets torch's thread count for the whole process (one is fastest on small shared
        machines; None leaves it alone)."""
        from transformers import AutoModelForCausalLM

        path = Path(directory).expanduser()
        if problem := model_dir_problem(path):
            raise ExecutorLoadError(problem)
        target = resolve_device(device)
        if target.type == "cpu" and threads is not None:
            torch.set_num_threads(threads)
        tokenizer = ExecutorTokenizer.load(path)
        extra = {} if attn_implementation is None else {"attn_implementation": attn_implementation}
        try:
            model: Any = AutoModelForCausalLM.from_pretrained(
                path, dtype=resolve_dtype(dtype, target), **extra
            )
        except (OSError, ValueError) as exc:
            raise ExecutorLoadError(f"cannot load a causal LM from {path}: {exc}") from None
        return cls(model.to(target), tokenizer, name=str(path), device=target)

    # Adapters --------------------------------------------------------------------------------

    @property
    def adapters(self) -> dict[str, str]:
        """Loaded adapter versions and the directories they came from."""
        return dict(self._adapters)  # a copy; changed only under the lock, read without it

    def load_adapter(self, version: str, directory: str | Path) -> None:
        """Load a PEFT LoRA adapter under `version`; a version already loaded is refused (unload
        it first, as with vLLM)."""
        from peft import PeftModel

        path = Path(directory).expanduser()
        if not version:
            raise ExecutorRequestError("an adapter needs a non-empty version name")
        if not (path / "adapter_config.json").is_file():
            raise ExecutorLoadError(f"{path} is not a PEFT adapter directory (no adapter_config.json)")
        with self._lock:
            if version in self._adapters:
                raise ExecutorRequestError(f"adapter {version!r} is already loaded: unload it first")
            try:
                if self._peft is None:
                    self._peft = PeftModel.from_pretrained(self._base, path, adapter_name=version).eval()
                else:
                    self._peft.load_adapter(path, adapter_name=version, is_trainable=False)
            except (OSError, ValueError, RuntimeError, KeyError) as exc:  # bad files, wrong shapes
                raise ExecutorLoadError(f"cannot load the adapter in {path}: {exc}") from None
            self._adapters[version] = str(path)

    def add_trainable_adapter(self, version: str, config: Any, *, directory: str | Path | None = None) -> Any:
        """Add a LoRA adapter to train, in place, under `version`: a new one from a peft
        `LoraConfig` (its initial weights drawn from torch's random generator) or, with
        `directory`, a trainable copy of a saved one. Returns the peft model that holds it beside
        the other adapters, over this model's own weights (no copy); `unload_adapter` removes it."""
        from peft import PeftModel, get_peft_model

        path = None if directory is None else Path(directory).expanduser()
        with self._lock:
            if version in self._adapters:
                raise ExecutorRequestError(f"adapter {version!r} is already loaded: unload it first")
            if self._peft is not None and path is None:
                self._peft.add_adapter(version, config)
            elif self._peft is not None:
                self._peft.load_adapter(path, adapter_name=version, is_trainable=True)
            elif path is None:
                self._peft = get_peft_model(self._base, config, adapter_name=version).eval()
            else:
                self._peft = PeftModel.from_pretrained(
                    self._base, path, adapter_name=version, is_trainable=True
                ).eval()
            self._adapters[version] = str(path) if path is not None else "(trained in this process)"
            return self._peft

    def pinned(self, version: str, *, name: str) -> LocalModel:
        """A view of this model, named `name`, that computes with adapter `version` when a call
        names none: the same weights, adapters and lock. Valid while `version` stays loaded."""
        self._check_adapter(version)
        view = copy.copy(self)  # shares the lock, the adapters' dict and the (peft) model
        view.name, view._pinned = name, version
        return view

    def unload_adapter(self, version: str) -> None:
        with self._lock:
            self._check_adapter(version)
            del self._adapters[version]
            assert self._peft is not None
            if self._adapters:
                self._peft.set_adapter(next(iter(self._adapters)))  # not the one deleted
                self._peft.delete_adapter(version)
            else:  # the last one: take the LoRA layers out again, the base model as it was
                self._base = self._peft.unload().eval()
                self._peft = None

    # Sampling ----------------------------------------------------------------------------------

    def sample(
        self,
        prompt_ids: Sequence[int],
        sampling: SamplingParams,
        *,
        adapter: str | None = None,
        top_logprobs: int = 0,
    ) -> SampledTokens:
        """Sample a completion of `prompt_ids`; see `sampling.py` for the rules and logprobs.
        `top_logprobs` asks for that many likeliest alternatives at each position as well.
        Without a seed in `sampling`, a random one is used."""
        seed = sampling.seed if sampling.seed is not None else secrets.randbits(63)
        return self.sample_batch([prompt_ids], sampling, [seed], adapter=adapter, top_logprobs=top_logprobs)[
            0
        ]

    def sample_group(
        self,
        prompt_ids: Sequence[int],
        sampling: SamplingParams,
        seeds: Sequence[int],
        *,
        adapter: str | None = None,
    ) -> list[SampledTokens]:
        """One completion of `prompt_ids` per seed, sampled together as one batch."""
        return self.sample_batch([prompt_ids] * len(seeds), sampling, seeds, adapter=adapter)

    def sample_batch(
        self,
        prompts: Sequence[Sequence[int]],
        sampling: SamplingParams,
        seeds: Sequence[int],
        *,
        adapter: str | None = None,
        top_logprobs: int = 0,
    ) -> list[SampledTokens]:
        """One completion per (prompt, seed) pair, all decoded as one batch. Row i is what
        `sample` gives for `prompts[i]` with seed `seeds[i]` (`sampling.seed` is ignored), batched
        arithmetic aside; each row's `max_tokens` is cut to what fits after its own prompt."""
        if len(prompts) != len(seeds) or not prompts:
            raise ExecutorRequestError(
                f"{len(prompts)} prompts and {len(seeds)} seeds: give one seed per prompt"
            )
        for prompt_ids in prompts:
            self._check_tokens(prompt_ids)
        _check_sampling(sampling)
        limits = [min(sampling.max_tokens, self.max_positions - len(p)) for p in prompts]
        with self._lock, self._policy(adapter) as model:
            return sample_batch(
                model,
                prompts,
                seeds,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                max_tokens=limits,
                stop_ids=self.stop_ids,
                device=self.device,
                top_logprobs=top_logprobs,
                constraint=self._action_constraint() if sampling.constrained else None,
            )

    def _action_constraint(self) -> ActionConstraint:
        """The action format's automaton over this tokenizer's token bytes (once: ~0.1 s for the
        tiny executor's 2,000 tokens, ~2.4 s for 150,000). Special and added tokens (chat markers,
        eos) never go into an action's text."""
        if self._constraint is None:
            known = min(self.vocab_size, self.tokenizer.vocab_size)
            hf = self.tokenizer.hf
            markers = {*self.stop_ids, *hf.all_special_ids, *hf.added_tokens_decoder}
            pieces = [self.tokenizer.token_bytes(t) if t not in markers else b"" for t in range(known)]
            self._constraint = ActionConstraint(pieces + [b""] * (self.vocab_size - known), self.stop_ids)
        return self._constraint

    def logprobs_of(
        self,
        prompt_ids: Sequence[int],
        completion_ids: Sequence[int],
        *,
        adapter: str | None = None,
    ) -> list[float]:
        """The raw log-probability of each completion id, by one teacher-forced forward pass."""
        self._check_tokens(prompt_ids, completion_ids)
        with self._lock, self._policy(adapter) as model:
            return teacher_forced_logprobs(model, prompt_ids, completion_ids, self.device)

    @contextmanager
    def _policy(self, adapter: str | None) -> Iterator[torch.nn.Module]:
        """The module that computes with `adapter` (None: the base, or a view's own adapter); call
        with the lock held."""
        adapter = self._pinned if adapter is None else adapter
        if adapter is not None:
            self._check_adapter(adapter)
            assert self._peft is not None
            self._peft.set_adapter(adapter)
            yield self._peft
            return
        disabled = self._peft.disable_adapter() if self._peft is not None else nullcontext()
        with disabled:
            yield self._peft if self._peft is not None else self._base

    def _check_adapter(self, version: str) -> None:
        if version not in self._adapters:
            loaded = ", ".join(sorted(self._adapters)) or "none"
            raise ExecutorRequestError(f"no adapter {version!r} is loaded (loaded: {loaded})", status=404)

    def _check_tokens(self, prompt_ids: Sequence[int], completion_ids: Sequence[int] = ()) -> None:
        if not prompt_ids:
            raise ExecutorRequestError("the prompt is empty: a completion needs at least one prompt token")
        if (
            len(prompt_ids) >= self.max_positions
            or len(prompt_ids) + len(completion_ids) > self.max_positions
        ):
            raise ExecutorRequestError(
                f"{len(prompt_ids)} prompt and {len(completion_ids)} completion tokens do not fit "
                f"in this model's context of {self.max_positions}: shorten the prompt"
            )
        bad = next((i for i in (*prompt_ids, *completion_ids) if not 0 <= i < self.vocab_size), None)
        if bad is not None:
            raise ExecutorRequestError(f"token id {bad} is outside the vocabulary (0..{self.vocab_size - 1})")


def _check_sampling(sampling: SamplingParams) -> None:
    if sampling.temperature < 0:
        raise ExecutorRequestError(f"temperature must be >= 0, got {sampling.temperature}")
    if not 0 < sampling.top_p <= 1:
        raise ExecutorRequestError(f"top_p must be in (0, 1], got {sampling.top_p}")
    if sampling.max_tokens < 1:
        raise ExecutorRequestError(f"max_tokens must be at least 1, got {sampling.max_tokens}")


def _eos_ids(model: Any, tokenizer: ExecutorTokenizer) -> set[int]:
    """Where the model stops: the generation config's eos ids, and the tokenizer's eos."""
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = set(configured) if isinstance(configured, list) else {configured}
    ids.add(tokenizer.eos_id)
    return {i for i in ids if isinstance(i, int)}


def resolve_device(name: str) -> torch.device:
    """`name` as a torch device: "auto" is cuda when torch sees a GPU, else cpu. A CUDA device
    torch cannot see is an ExecutorLoadError that says what to do."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ExecutorLoadError(f"unknown device {name!r}: use auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ExecutorLoadError(
                f"device {name!r} asked for, but torch sees no CUDA GPU here (a CPU-only torch, or no "
                'driver): set [executor] device = "cpu" or "auto", or install a CUDA build of torch'
            )
        if device.index is not None and device.index >= count:
            raise ExecutorLoadError(
                f"device {name!r} asked for, but torch sees {count} GPU(s): use cuda:0 to cuda:{count - 1}"
            )
    return device


def resolve_dtype(name: str | None, device: torch.device) -> torch.dtype:
    """`name` as a torch dtype: None is float32; "auto" is float32 on CPU, and on CUDA bfloat16
    where the GPU supports it, else float16."""
    if name is None or (name == "auto" and device.type != "cuda"):
        return torch.float32
    if name == "auto":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ExecutorLoadError(f"unknown dtype {name!r}: use float32, bfloat16 or float16")
    return dtype
