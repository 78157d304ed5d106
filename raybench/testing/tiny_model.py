"""A tiny local model directory (tokenizer.json, tokenizer_config.json with a chat template, config.json),
built on the spot with the `tokenizers` package: tests and dry runs never download a tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["CHAT_TEMPLATE", "build_tiny_model_dir", "write_model_metadata"]

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

_CORPUS = (
    "the quick brown fox jumps over the lazy dog while people write numbers and water flows into time "
    "benchmarks measure latency throughput goodput under a service level objective with warm up and sweeps "
    "an engine serves tokens to many users who wait for the first token and then for each next token "
)


def build_tiny_model_dir(path: str | Path, vocab_size: int = 600) -> Path:
    """Write a byte-level BPE tokenizer trained on a small built-in corpus, plus model metadata."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|bos|>", "<|eos|>", "<|user|>", "<|assistant|>", "<|system|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator([_CORPUS] * 50, trainer=trainer)
    tokenizer.save(str(folder / "tokenizer.json"))
    write_model_metadata(folder, tokenizer.get_vocab_size())
    return folder


def write_model_metadata(folder: Path, vocab_size: int, **extra_tokenizer_config: str) -> None:
    """tokenizer_config.json (the chat template, special tokens) and a Llama-like config.json."""
    config = {
        "chat_template": CHAT_TEMPLATE,
        "bos_token": "<|bos|>",
        "eos_token": "<|eos|>",
        **extra_tokenizer_config,
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": 8192,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=1))
    model = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "intermediate_size": 128,
        "vocab_size": vocab_size,
        "max_position_embeddings": 8192,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "torch_dtype": "bfloat16",
    }
    (folder / "config.json").write_text(json.dumps(model, indent=1))
