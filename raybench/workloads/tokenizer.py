"""Token counting and exact-length text: a local Hugging Face tokenizer, or an approximate word counter."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from raybench.errors import ConfigError, Problem

__all__ = ["ApproxCounter", "HFTokenCounter", "TokenCounter", "load_counter"]

# Short common English words: a single token for mainstream LLM tokenizers and for the simulated
# engine (which counts whitespace-separated words), so approximate lengths stay close to the target.
_WORD_TEXT = (
    "the of and to in is you that it he was for on are as with his they at be this have from or one "
    "had by word but not what all were we when your can said there use an each which she do how "
    "their if will up other about out many then them these so some her would make like him into "
    "time has look two more write go see number no way could people my than first water been call "
    "who oil its now find"
)
_WORDS = np.array(_WORD_TEXT.split())


class TokenCounter(Protocol):
    """Counts tokens and writes text of a given token length."""

    exact: bool
    identity: str

    def count(self, text: str) -> int: ...
    def make_text(self, rng: np.random.Generator, tokens: int, lead: str = "") -> str: ...
    def count_chat(self, text: str) -> int: ...
    def count_messages(self, messages: list[dict[str, str]]) -> int: ...


class ApproxCounter:
    """No tokenizer given: one token per whitespace-separated word (counts marked approximate)."""

    exact = False
    identity = "approx-words-v1"

    def count(self, text: str) -> int:
        return len(text.split())

    def count_chat(self, text: str) -> int:
        return self.count(text)

    def count_messages(self, messages: list[dict[str, str]]) -> int:
        return sum(self.count(m["content"]) for m in messages)

    def make_text(self, rng: np.random.Generator, tokens: int, lead: str = "") -> str:
        words = _WORDS[rng.integers(0, len(_WORDS), size=max(tokens - (1 if lead else 0), 0))].tolist()
        return " ".join([lead, *words] if lead else words)


class HFTokenCounter:
    """A local `tokenizer.json` (or a directory holding one); never downloads anything."""

    exact = True

    def __init__(self, path: str) -> None:
        from tokenizers import Tokenizer

        file = Path(path)
        folder = file if file.is_dir() else file.parent
        if file.is_dir():
            file = file / "tokenizer.json"
        if not file.is_file():
            raise ConfigError("model.tokenizer", [Problem("model.tokenizer", f"no tokenizer.json at {path!r}")])
        self._tok = Tokenizer.from_file(str(file))
        self.identity = "hf:" + hashlib.sha256(file.read_bytes()).hexdigest()[:16]
        self._template_source = _chat_template_source(folder)
        self._template: Any = None
        self._pool = self._word_pool()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_tok"] = self._tok.to_str()
        state["_template"] = None  # compiled again where it is used
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        from tokenizers import Tokenizer

        state["_tok"] = Tokenizer.from_str(state["_tok"])
        self.__dict__.update(state)

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def count_chat(self, text: str) -> int:
        """Tokens of a one-message chat as the server sees it (chat template applied when there is one)."""
        if self._template_source is None:
            return self.count(text)
        return self.count_messages([{"role": "user", "content": text}])

    def count_messages(self, messages: list[dict[str, str]]) -> int:
        """Tokens of a chat (a messages list) as the server sees it; without a template, the contents summed."""
        if self._template_source is None:
            return sum(self.count(m["content"]) for m in messages)
        if self._template is None:
            import jinja2

            self._template = jinja2.Environment(autoescape=False).from_string(self._template_source)
        rendered = self._template.render(messages=messages, add_generation_prompt=True, bos_token="", eos_token="")
        return self.count(rendered)

    def make_text(self, rng: np.random.Generator, tokens: int, lead: str = "") -> str:
        """Text that encodes to exactly `tokens` tokens (trimmed or padded until it does)."""
        if tokens <= 0:
            return ""
        ids = self._tok.encode(lead, add_special_tokens=False).ids if lead else []
        ids = (ids + self._pool[rng.integers(0, len(self._pool), size=tokens)].tolist())[:tokens]
        text = self._tok.decode(ids)
        for _ in range(20):
            got = self._tok.encode(text, add_special_tokens=False).ids
            if len(got) == tokens:
                return text
            if len(got) > tokens:
                text = self._tok.decode(got[:tokens])
            else:
                extra = self._pool[rng.integers(0, len(self._pool), size=tokens - len(got))].tolist()
                text = self._tok.decode(got + extra)
        return text  # pathological tokenizer: counted, not exact, and the record's usage says so

    def _word_pool(self) -> np.ndarray:
        vocab = self._tok.get_vocab()
        pool = []
        for index in sorted(vocab.values())[:30_000]:  # bounded scan: a 128k vocab needs no more
            piece = self._tok.decode([index])
            if piece.strip().isalpha() and piece.strip().isascii() and len(self._tok.encode(piece).ids) == 1:
                pool.append(index)
        if not pool:
            pool = list(vocab.values())
        return np.array(sorted(pool), dtype=np.int64)


def _chat_template_source(folder: Path) -> str | None:
    """The Jinja chat template of a Hugging Face tokenizer folder, if it has one."""
    config = folder / "tokenizer_config.json"
    if not config.is_file():
        return None
    template = json.loads(config.read_text(encoding="utf-8")).get("chat_template")
    return template if isinstance(template, str) else None


def load_counter(path: str | None) -> TokenCounter:
    """The exact counter of a local tokenizer when `path` is given, else the approximate one."""
    return HFTokenCounter(path) if path else ApproxCounter()
