"""A tiny local model directory for Dynamo's mocker: every token id the mocker can emit decodes to text.

The mocker (ai-dynamo 1.6.1) emits random output token ids in [1000, 2000); a byte-level BPE tokenizer
turns many of those into partial UTF-8 (nothing streamed) or has no such ids at all. This builds a
word-level tokenizer of `vocab_size` ids in which every non-special id is a plain ASCII word, so each
generated token streams as non-empty text. Built on the spot: tests and dry runs download nothing.
"""

from __future__ import annotations

import tempfile
from functools import lru_cache
from pathlib import Path

from raybench.testing.tiny_model import write_model_metadata

__all__ = ["MOCKER_TOKEN_IDS", "build_dynamo_model_dir", "model_files"]

MOCKER_TOKEN_IDS = range(1000, 2000)  # what the 1.6.1 mocker samples output ids from
_SPECIAL = ["<|bos|>", "<|eos|>", "<|user|>", "<|assistant|>", "<|system|>", "<unk>"]
_WORDS = (
    "the quick brown fox jumps over lazy dog while people write numbers and water flows into time benchmarks "
    "measure latency throughput goodput under a service level objective with warm up sweeps an engine serves "
    "tokens to many users who wait for first token then each next prefill decode cache"
)


def build_dynamo_model_dir(path: str | Path, vocab_size: int = 2048) -> Path:
    """Write tokenizer.json (word level, whitespace split), tokenizer_config.json with a chat template,
    and a Llama-like config.json; ids past the built-in words are words `tok<id>`."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    if vocab_size < max(MOCKER_TOKEN_IDS) + 1:
        raise ValueError(f"vocab_size must cover the mocker's ids (>= {max(MOCKER_TOKEN_IDS) + 1})")
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    vocab: dict[str, int] = {}
    for word in [*_SPECIAL, *dict.fromkeys(_WORDS.split()), *(chr(c) for c in range(33, 127))]:
        vocab.setdefault(word, len(vocab))
    for i in range(len(vocab), vocab_size):
        vocab[f"tok{i}"] = i
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with spaces
    tokenizer.add_special_tokens([AddedToken(s, special=True) for s in _SPECIAL])
    tokenizer.save(str(folder / "tokenizer.json"))
    write_model_metadata(folder, vocab_size, unk_token="<unk>")
    return folder


@lru_cache(maxsize=1)
def _cached_files(vocab_size: int) -> tuple[tuple[str, str], ...]:
    with tempfile.TemporaryDirectory(prefix="raybench-dynamo-model-") as tmp:
        folder = build_dynamo_model_dir(tmp, vocab_size)
        return tuple((p.name, p.read_text(encoding="utf-8")) for p in sorted(folder.iterdir()))


def model_files(vocab_size: int = 2048) -> dict[str, str]:
    """The model folder's files as name -> text (shipped to the nodes inside a launch plan)."""
    return dict(_cached_files(vocab_size))
