"""Cost models of the simulated engine: how long one scheduler iteration takes.

The scheduler describes each iteration's batch as a `BatchShape` and asks a `CostModel` for its
duration. `RooflineCostModel` (perf.py) is the performance model; `LinearCostModel` is a
transparent stand-in that makes exact-timing tests of the scheduler easy to read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["BatchShape", "CostModel", "LinearCostModel"]


@dataclass(frozen=True)
class BatchShape:
    """What one forward pass computes, summed over the sequences scheduled in it.

    A sequence scheduled with n new tokens on top of c tokens already in its KV cache adds n to
    `new_tokens`, c to `context_tokens`, and n*c + n*(n+1)/2 (query-key pairs) to
    `attention_pairs`. `decode_seqs` counts those generating one token after their prompt.
    """

    num_seqs: int = 0
    new_tokens: int = 0
    decode_seqs: int = 0
    context_tokens: int = 0
    attention_pairs: int = 0

    @property
    def prefill_tokens(self) -> int:
        return self.new_tokens - self.decode_seqs

    def plus(self, new_tokens: int, context_tokens: int, decoding: bool) -> BatchShape:
        """This shape with one more sequence scheduled."""
        return BatchShape(
            num_seqs=self.num_seqs + 1,
            new_tokens=self.new_tokens + new_tokens,
            decode_seqs=self.decode_seqs + int(decoding),
            context_tokens=self.context_tokens + context_tokens,
            attention_pairs=self.attention_pairs + new_tokens * context_tokens + new_tokens * (new_tokens + 1) // 2,
        )


@runtime_checkable
class CostModel(Protocol):
    """Duration of one continuous-batching iteration (one forward pass of the whole batch)."""

    def iteration_time_s(self, batch: BatchShape) -> float:
        """Seconds one iteration of `batch` takes."""
        ...


@dataclass(frozen=True)
class LinearCostModel:
    """overhead + decode_ms_per_seq * decode_seqs + prefill_ms_per_token * prefill_tokens.

    Ignores context length and hardware; for tests that need iteration times they can read off.
    """

    iteration_overhead_ms: float
    decode_ms_per_seq: float = 0.0
    prefill_ms_per_token: float = 0.0

    def __post_init__(self) -> None:
        for name in ("iteration_overhead_ms", "decode_ms_per_seq", "prefill_ms_per_token"):
            value = getattr(self, name)
            if not value >= 0.0:  # also rejects NaN
                raise ValueError(f"{name} must be >= 0, got {value!r}")

    def iteration_time_s(self, batch: BatchShape) -> float:
        total_ms = (
            self.iteration_overhead_ms
            + self.decode_ms_per_seq * batch.decode_seqs
            + self.prefill_ms_per_token * batch.prefill_tokens
        )
        return total_ms / 1000.0
