"""Synthetic prompts: sampled input/output lengths, deterministic per (seed, request index)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

from raybench.config.workload import LengthSpec, SyntheticWorkloadSpec

__all__ = ["Prompt", "SyntheticSource", "workload_fingerprint"]

# Short common English words: each is a single token for the tokenizers of mainstream LLMs and
# for the simulated engine (which counts whitespace-separated words), so ISL stays close to target.
_VOCAB = np.array(
    [
        "the",
        "of",
        "and",
        "to",
        "in",
        "is",
        "you",
        "that",
        "it",
        "he",
        "was",
        "for",
        "on",
        "are",
        "as",
        "with",
        "his",
        "they",
        "at",
        "be",
        "this",
        "have",
        "from",
        "or",
        "one",
        "had",
        "by",
        "word",
        "but",
        "not",
        "what",
        "all",
        "were",
        "we",
        "when",
        "your",
        "can",
        "said",
        "there",
        "use",
        "an",
        "each",
        "which",
        "she",
        "do",
        "how",
        "their",
        "if",
        "will",
        "up",
        "other",
        "about",
        "out",
        "many",
        "then",
        "them",
        "these",
        "so",
        "some",
        "her",
        "would",
        "make",
        "like",
        "him",
        "into",
        "time",
        "has",
        "look",
        "two",
        "more",
        "write",
        "go",
        "see",
        "number",
        "no",
        "way",
        "could",
        "people",
        "my",
        "than",
        "first",
        "water",
        "been",
        "call",
        "who",
        "oil",
        "its",
        "now",
        "find",
    ]
)
_GENERATOR_VERSION = "synthetic-v1"


@dataclass(frozen=True)
class Prompt:
    """One request's content: the text sent, its intended token counts, and a fingerprint."""

    index: int
    text: str
    input_tokens: int
    output_tokens: int
    fingerprint: str


class SyntheticSource:
    """Prompt `i` depends only on (seed, i): every engine and every generator sees the same prompts."""

    def __init__(self, spec: SyntheticWorkloadSpec) -> None:
        self._spec = spec

    def prompt(self, index: int) -> Prompt:
        """Build prompt number `index` (a few microseconds per hundred tokens)."""
        rng = np.random.default_rng([self._spec.seed, index])
        isl = _sample(self._spec.isl, rng)
        osl = _sample(self._spec.osl, rng)
        # A unique leading marker defeats prefix caching across requests, as distinct user prompts do.
        words = _VOCAB[rng.integers(0, len(_VOCAB), size=max(isl - 1, 0))]
        text = " ".join([f"r{index}", *words.tolist()]) if isl > 0 else ""
        digest = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
        return Prompt(index=index, text=text, input_tokens=isl, output_tokens=osl, fingerprint=digest)


def _sample(spec: LengthSpec, rng: np.random.Generator) -> int:
    if spec.distribution == "fixed":
        value = float(spec.mean)
    elif spec.distribution == "uniform":
        value = float(rng.integers(spec.min, (spec.max or spec.min) + 1))
    else:
        value = float(rng.normal(spec.mean, spec.std))
    upper = spec.max if spec.max is not None else np.iinfo(np.int32).max
    return int(np.clip(round(value), spec.min, upper))


def workload_fingerprint(spec: SyntheticWorkloadSpec) -> str:
    """Digest of everything that decides the prompt stream (spec and generator version)."""
    payload = json.dumps({"v": _GENERATOR_VERSION, "spec": spec.model_dump(mode="json")}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()
