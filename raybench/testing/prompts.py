"""FixedPrompts: a prompt source of fixed lengths for loadgen tests and benchmarks (no tokenizer, no dataset)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = ["FixedPrompt", "FixedPrompts"]

_WORDS = ("the", "of", "and", "to", "in", "is", "you", "that", "it", "he", "was", "for", "on", "are")


@dataclass(frozen=True)
class FixedPrompt:
    """One prompt: `text`, the output length asked for, and a fingerprint of the text."""

    text: str
    output_tokens: int
    fingerprint: str


class FixedPrompts:
    """Prompt number `index` has `input_words` words (distinct per index) and asks for `output_tokens`."""

    def __init__(self, input_words: int = 128, output_tokens: int = 128) -> None:
        self.input_words = input_words
        self.output_tokens = output_tokens

    def prompt(self, index: int) -> FixedPrompt:
        words = [str(index)] + [_WORDS[(index + i) % len(_WORDS)] for i in range(self.input_words - 1)]
        text = " ".join(words)
        return FixedPrompt(text, self.output_tokens, hashlib.sha256(text.encode()).hexdigest()[:16])
