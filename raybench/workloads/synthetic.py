"""Synthetic prompts: sampled input/output lengths, deterministic per (seed, request index)."""

from __future__ import annotations

from typing import Any

import numpy as np

from raybench.config.workload import SyntheticWorkloadSpec
from raybench.workloads.base import Prompt, fingerprint_text, register_source
from raybench.workloads.lengths import sample_length
from raybench.workloads.tokenizer import TokenCounter

__all__ = ["SyntheticSource"]


@register_source("synthetic")
class SyntheticSource:
    """Prompt `i` of `input_tokens` tokens asking for `output_tokens`, from rng([seed, i])."""

    kind = "synthetic"

    def __init__(self, spec: SyntheticWorkloadSpec, counter: TokenCounter) -> None:
        self.spec = spec
        self.counter = counter

    def prompt(self, index: int) -> Prompt:
        rng = np.random.default_rng([self.spec.seed, index])
        isl = sample_length(self.spec.isl, rng)
        osl = sample_length(self.spec.osl, rng)
        # A unique leading marker defeats prefix caching across requests, as distinct user prompts do.
        text = self.counter.make_text(rng, isl, lead=f"r{index}")
        tokens = self.counter.count_chat(text) if self.spec.api == "chat" else isl
        return Prompt(
            index=index, text=text, input_tokens=tokens, output_tokens=osl, fingerprint=fingerprint_text(text)
        )

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "spec": self.spec.model_dump(mode="json"), "version": "synthetic-v2"}
