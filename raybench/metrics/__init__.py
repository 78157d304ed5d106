"""Metrics: pure functions over record tables (Arrow), no Ray: latency, throughput, goodput, knee."""

from __future__ import annotations

from raybench.metrics.knee import EXTEND_MIN_GOODPUT_PCT, defensible_capacity_tok_s, find_knee, should_extend
from raybench.metrics.latency import (
    ITL_DEFINITION,
    RowLatencies,
    TokenEvents,
    e2e_ms,
    itl_samples,
    ok_mask,
    output_token_counts,
    queue_ms,
    row_latencies,
    token_events,
    tpot_ms,
    ttft_from_schedule_ms,
    ttft_ms,
)
from raybench.metrics.percentiles import PERCENTILES, Distribution, distribution
from raybench.metrics.step import StepMetrics, Window, compute_step, compute_step_from_parts, meets_slo

__all__ = [
    "EXTEND_MIN_GOODPUT_PCT",
    "ITL_DEFINITION",
    "PERCENTILES",
    "Distribution",
    "RowLatencies",
    "StepMetrics",
    "TokenEvents",
    "Window",
    "compute_step",
    "compute_step_from_parts",
    "defensible_capacity_tok_s",
    "distribution",
    "e2e_ms",
    "find_knee",
    "itl_samples",
    "meets_slo",
    "ok_mask",
    "output_token_counts",
    "queue_ms",
    "row_latencies",
    "should_extend",
    "token_events",
    "tpot_ms",
    "ttft_from_schedule_ms",
    "ttft_ms",
]
