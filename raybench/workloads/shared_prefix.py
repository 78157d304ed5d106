"""Shared-prefix prompts: `groups` prefixes (system prompts, few-shot, RAG context) plus unique suffixes."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from raybench.config.workload import SharedPrefixWorkloadSpec
from raybench.workloads.base import Prompt, fingerprint_text, register_source
from raybench.workloads.lengths import sample_length
from raybench.workloads.tokenizer import TokenCounter

__all__ = ["SharedPrefixSource"]


@register_source("shared_prefix")
class SharedPrefixSource:
    """Request `i` = prefix of group `i % groups` (identical text across the group) + its own suffix."""

    kind = "shared_prefix"

    def __init__(self, spec: SharedPrefixWorkloadSpec, counter: TokenCounter) -> None:
        self.spec = spec
        self.counter = counter
        self.prefix = lru_cache(maxsize=4096)(self._prefix)

    def _prefix(self, group: int) -> str:
        rng = np.random.default_rng([self.spec.seed, 1, group])
        return self.counter.make_text(rng, self.spec.prefix_tokens, lead=f"g{group}")

    def prompt(self, index: int) -> Prompt:
        rng = np.random.default_rng([self.spec.seed, 2, index])
        suffix_len = sample_length(self.spec.suffix_tokens, rng)
        osl = sample_length(self.spec.osl, rng)
        prefix = self.prefix(index % self.spec.groups)
        suffix = self.counter.make_text(rng, suffix_len, lead=f"r{index}")
        text = f"{prefix}\n{suffix}"
        tokens = self.counter.count_chat(text) if self.spec.api == "chat" else self.counter.count(text)
        return Prompt(
            index=index, text=text, input_tokens=tokens, output_tokens=osl, fingerprint=fingerprint_text(text)
        )

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "spec": self.spec.model_dump(mode="json"), "version": "shared-prefix-v1"}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["prefix"]  # an lru_cache wrapper does not pickle; rebuilt on arrival
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.prefix = lru_cache(maxsize=4096)(self._prefix)
