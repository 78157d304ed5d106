"""Cost models of the simulated engine: how long one scheduler iteration takes.

The scheduler asks a `CostModel` for the duration of each iteration; a later roofline
performance model replaces `LinearCostModel` behind the same one-method protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["CostModel", "LinearCostModel"]


@runtime_checkable
class CostModel(Protocol):
    """Duration of one continuous-batching iteration (one forward pass of the whole batch)."""

    def iteration_time_s(self, prefill_tokens: int, decoding_seqs: int, context_tokens: int) -> float:
        """Seconds one iteration takes.

        prefill_tokens: prompt tokens of the requests admitted (prefilled) in this iteration.
        decoding_seqs: sequences already running that decode one token in this iteration
            (the newly admitted ones are not counted: their first token comes from the prefill).
        context_tokens: tokens held in the KV cache by every sequence in the batch
            (prompt plus tokens generated so far), newly admitted ones included.
        """
        ...


@dataclass(frozen=True)
class LinearCostModel:
    """overhead + decode_ms_per_seq * decoding_seqs + prefill_ms_per_token * prefill_tokens.

    Ignores context length: attention cost is left to the roofline model.
    """

    iteration_overhead_ms: float
    decode_ms_per_seq: float
    prefill_ms_per_token: float

    def __post_init__(self) -> None:
        for name in ("iteration_overhead_ms", "decode_ms_per_seq", "prefill_ms_per_token"):
            value = getattr(self, name)
            if not value >= 0.0:  # also rejects NaN
                raise ValueError(f"{name} must be >= 0, got {value!r}")

    def iteration_time_s(self, prefill_tokens: int, decoding_seqs: int, context_tokens: int) -> float:
        del context_tokens  # a linear model has no attention term
        total_ms = (
            self.iteration_overhead_ms
            + self.decode_ms_per_seq * decoding_seqs
            + self.prefill_ms_per_token * prefill_tokens
        )
        return total_ms / 1000.0
