"""Configuration of one simulated engine server: the served model name and its cost parameters."""

from __future__ import annotations

from dataclasses import dataclass

from raybench.engines.sim.cost import LinearCostModel

__all__ = ["SimConfig"]


@dataclass(frozen=True)
class SimConfig:
    """What one `python -m raybench.engines.sim` process serves, and how fast.

    Defaults are a small model on one fast GPU: about 6 ms per iteration plus 0.9 ms per
    decoding sequence, so a batch of 16 decodes at roughly 50 tokens/s per sequence.
    """

    model: str = "raybench-sim"
    max_num_seqs: int = 16
    iteration_overhead_ms: float = 6.0
    decode_ms_per_seq: float = 0.9
    prefill_ms_per_token: float = 0.02

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("model must be a non-empty name, e.g. 'raybench-sim'")
        if self.max_num_seqs < 1:
            raise ValueError(f"max_num_seqs must be >= 1, got {self.max_num_seqs}")
        self.cost_model()  # validates the cost parameters

    def cost_model(self) -> LinearCostModel:
        return LinearCostModel(
            iteration_overhead_ms=self.iteration_overhead_ms,
            decode_ms_per_seq=self.decode_ms_per_seq,
            prefill_ms_per_token=self.prefill_ms_per_token,
        )
