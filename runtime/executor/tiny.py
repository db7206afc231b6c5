"""A tiny executor model, built offline in about a second: tokenizer trained here, weights random.

    path = build_tiny_model(directory, seed=0)   # then LocalBackend(LocalModel.load(path))
    path = build_tiny_model(directory, architecture="llama")   # the same tokenizer, a Llama model

The directory holds what `from_pretrained` expects of a real model: `config.json`,
`model.safetensors`, `generation_config.json`, `tokenizer.json`, `tokenizer_config.json` and
`chat_template.jinja`. `temper quickstart` starts from it; tests use it everywhere.

The tokenizer is byte-level BPE trained on `tiny_corpus` (terminal text and JSON actions), so any
text encodes and `decode(encode(text)) == text`. Its chat template renders

    <|system|>\\n...<|end|>\\n<|user|>\\n...<|end|>\\n<|assistant|>\\n

and the model ends its turn with `<|end|>`, the eos token.

Invariants: the same arguments give the same files, byte for byte (the tokenizer does not depend
on the seed; the weights depend only on it). The global torch random state is left as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

SYSTEM, USER, ASSISTANT, TOOL = "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>"
END, PAD = "<|end|>", "<|pad|>"
SPECIAL_TOKENS = (PAD, END, SYSTEM, USER, ASSISTANT, TOOL)
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] not in ['system', 'user', 'assistant', 'tool'] %}"
    "{{ raise_exception('unknown role: ' + message['role']) }}"
    "{% endif %}"
    "{{ '<|' + message['role'] + '|>\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% elif message['content'] %}"
    "{% for part in message['content'] %}{{ part['text'] }}{% endfor %}"
    "{% endif %}"
    "{{ '<|end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)


def build_tiny_model(
    directory: str | Path,
    *,
    seed: int = 0,
    vocab_size: int = 2000,
    hidden: int = 128,
    layers: int = 2,
    heads: int = 4,
    max_positions: int = 2048,
    architecture: Literal["qwen3", "llama"] = "qwen3",
) -> Path:
    """Train the tokenizer, make a randomly initialised causal LM of `architecture` (Qwen3 or
    Llama, the same sizes), save both in `directory` (created if missing) and return it."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, LlamaConfig, Qwen3Config

    if hidden % heads:
        raise ValueError(f"hidden ({hidden}) must be a multiple of heads ({heads})")
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(vocab_size)
    end_id = tokenizer.convert_tokens_to_ids(END)
    config_classes = {"qwen3": Qwen3Config, "llama": LlamaConfig}
    if architecture not in config_classes:
        raise ValueError(f"architecture must be one of {', '.join(config_classes)}; got {architecture!r}")
    config = config_classes[architecture](
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 3,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=max(1, heads // 2),
        head_dim=hidden // heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        eos_token_id=end_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.generation_config = GenerationConfig(
        eos_token_id=end_id, pad_token_id=tokenizer.pad_token_id, do_sample=True
    )
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def build_tokenizer(vocab_size: int = 2000) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on the built-in corpus, with the chat template.
    `vocab_size` is an upper bound; the corpus supports about 2,260 tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from runtime.executor.tiny_corpus import corpus_lines

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        min_frequency=1,
        show_progress=False,
    )
    core.train_from_iterator(corpus_lines(), trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token=END,
        pad_token=PAD,
        additional_special_tokens=[SYSTEM, USER, ASSISTANT, TOOL],
        chat_template=CHAT_TEMPLATE,
        clean_up_tokenization_spaces=False,
        model_max_length=None,
    )
