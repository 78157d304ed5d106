"""The service-level objective a step must hold (MEASUREMENT.md, "SLO, goodput, knee")."""

from __future__ import annotations

from pydantic import Field

from raybench.config.base import StrictModel

__all__ = ["SloSpec", "ValiditySpec"]


class SloSpec(StrictModel):
    """Latency bounds per request and per step; `max_error_rate` bounds failures in a step."""

    ttft_p99_ms: float = Field(gt=0, description="TTFT bound: P99 of the step, and per request")
    itl_p50_ms: float = Field(gt=0, description="ITL bound: P50 of the step; per request on TPOT")
    e2e_p99_ms: float | None = Field(default=None, gt=0)
    tpot_p99_ms: float | None = Field(default=None, gt=0)
    max_error_rate: float = Field(default=0.01, ge=0, le=1)


class ValiditySpec(StrictModel):
    """Thresholds that flag a step whose numbers cannot be trusted (the harness measured itself)."""

    loop_lag_p99_ms: float = Field(default=2.0, gt=0)
    queue_p99_ms: float = Field(default=5.0, gt=0)
    min_measured_requests: int = Field(default=100, ge=1)
    max_clock_uncertainty_ms: float = Field(default=1.0, gt=0)
