"""The roofline performance model: one iteration's time from its FLOPs, bytes and TP all-reduces.

Per GPU of a TP group of size t, for a batch of N new tokens over C cached context tokens:

    flops   = (2 * active_params * N + 4 * layers * heads * head_dim * attention_pairs) / t
    gpu_s   = max(flops / (tflops * compute_efficiency),
                  weights_touched(N) / t / (hbm * bandwidth_efficiency)
                  + kv_bytes_per_token / t * (C + N) / (hbm * attention_efficiency))
    comm_s  = 2 * layers * (allreduce_latency + 2 (t-1)/t * N * hidden * 2 bytes / link)   (t > 1)
    iter_s  = gpu_s + comm_s + iteration_overhead

Weights are read once per iteration, whatever the batch; an MoE layer reads only the experts its
tokens were routed to (in expectation, with uniform routing). See docs/simulator.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from raybench.engines.sim.config import Resolved
from raybench.engines.sim.cost import BatchShape

__all__ = ["IterationBreakdown", "RooflineCostModel", "kv_bytes_per_token"]

_ACTIVATION_BYTES = 2  # activations travel in bf16 whatever the weight precision


def kv_bytes_per_token(resolved: Resolved) -> float:
    """KV-cache bytes one token occupies across the whole model (all layers, all TP ranks)."""
    m = resolved.model
    return 2 * m.num_layers * m.num_kv_heads * m.head_dim * resolved.precision.kv_bytes


@dataclass(frozen=True)
class IterationBreakdown:
    """Where one iteration's time goes, in seconds."""

    compute_s: float
    memory_s: float
    allreduce_s: float
    overhead_s: float

    @property
    def total_s(self) -> float:
        return max(self.compute_s, self.memory_s) + self.allreduce_s + self.overhead_s


class RooflineCostModel:
    """Iteration time of one TP group from the resolved presets (implements `CostModel`)."""

    def __init__(self, resolved: Resolved) -> None:
        m, p, prof = resolved.model, resolved.precision, resolved.profile
        self._tp = resolved.tp
        self._flops_per_s = resolved.tflops * 1e12 * prof.compute_efficiency
        self._bytes_per_s = resolved.gpu.hbm_gb_s * 1e9 * prof.bandwidth_efficiency
        self._kv_bytes_per_s = resolved.gpu.hbm_gb_s * 1e9 * prof.attention_efficiency
        self._active_params = m.active_params_b * 1e9
        self._attn_flops_per_pair = 4.0 * m.num_layers * m.num_heads * m.head_dim
        self._kv_bytes_per_token = kv_bytes_per_token(resolved)
        self._overhead_s = prof.iteration_overhead_ms / 1e3
        experts = max(m.num_experts, 1)
        routed = min(max(m.experts_per_token, 1), experts)
        expert_params = 0.0 if experts == 1 else (m.params_b - m.active_params_b) * 1e9 / (experts - routed)
        self._experts, self._routed = experts, routed
        self._expert_weight_bytes = expert_params * p.weight_bytes
        self._shared_weight_bytes = (m.params_b * 1e9 - expert_params * experts) * p.weight_bytes
        self._allreduces = 2 * m.num_layers
        self._allreduce_latency_s = resolved.gpu.allreduce_latency_us / 1e6
        self._link_bytes_per_s = resolved.gpu.interconnect_gb_s * 1e9
        self._hidden = m.hidden_size

    def weight_bytes_touched(self, tokens: int) -> float:
        """Weight bytes one iteration reads (whole model): every dense weight, the routed experts."""
        if self._experts == 1:
            return self._shared_weight_bytes
        untouched = (1.0 - self._routed / self._experts) ** max(tokens, 1)
        return self._shared_weight_bytes + self._expert_weight_bytes * self._experts * (1.0 - untouched)

    def breakdown(self, batch: BatchShape) -> IterationBreakdown:
        if batch.num_seqs == 0:
            return IterationBreakdown(0.0, 0.0, 0.0, 0.0)
        tokens = batch.new_tokens
        flops = 2.0 * self._active_params * tokens + self._attn_flops_per_pair * batch.attention_pairs
        kv_bytes = self._kv_bytes_per_token * (batch.context_tokens + tokens)
        memory_s = self.weight_bytes_touched(tokens) / self._bytes_per_s + kv_bytes / self._kv_bytes_per_s
        return IterationBreakdown(
            compute_s=flops / self._tp / self._flops_per_s,
            memory_s=memory_s / self._tp,
            allreduce_s=self._allreduce_s(tokens),
            overhead_s=self._overhead_s,
        )

    def iteration_time_s(self, batch: BatchShape) -> float:
        return self.breakdown(batch).total_s

    def _allreduce_s(self, tokens: int) -> float:
        if self._tp == 1:
            return 0.0
        ring = 2.0 * (self._tp - 1) / self._tp * tokens * self._hidden * _ACTIVATION_BYTES / self._link_bytes_per_s
        return self._allreduces * (self._allreduce_latency_s + ring)
