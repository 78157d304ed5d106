"""The per-engine summary JSON: the article's reproducible-output keys verbatim, plus steps and provenance."""

from __future__ import annotations

from typing import Any

from raybench.config.job import JobSpec

__all__ = ["DEFINITIONS", "KNEE_KEYS", "SUMMARY_VERSION", "build_summary"]

# Bump when a key changes meaning or disappears; docs/summary.schema.json describes this version.
SUMMARY_VERSION = "1"

KNEE_KEYS = ("concurrency", "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "throughput_tok_s", "goodput_tok_s")

DEFINITIONS = {
    "ttft": "first_token_ns - sent_ns: first SSE event carrying at least one output token",
    "itl": "token-weighted inter-token gaps: each gap between token-bearing events divided by the tokens "
    "the later event carried",
    "tpot": "(last_token_ns - first_token_ns) / (output_tokens - 1), requests with >= 2 output tokens",
    "e2e": "done_ns - sent_ns",
    "throughput": "output tokens whose event arrived inside the measurement window / window length",
    "goodput": "throughput counting only requests that finished ok with TTFT <= ttft_p99_ms and TPOT <= itl_p50_ms",
    "slo_held": "step TTFT P99 <= ttft_p99_ms and ITL P50 <= itl_p50_ms and error rate <= max_error_rate",
    "knee": "the highest-load step that holds the SLO; defensible capacity = its goodput",
    "percentiles": "exact, over all generators' raw samples",
    "latency_population": "requests with status ok in the measure phase",
    "goodput_pct": "goodput / throughput x 100",
    "extend_past_knee": "past the knee, further steps run until goodput % falls below 50 %",
    "validity": "client_saturated: loop-lag P99 or queue P99 above the job's validity thresholds; "
    "error_rate_exceeded: error rate above max_error_rate; too_few_samples: fewer measured requests than "
    "min_measured_requests; clock_uncertain: clock-offset uncertainty above max_clock_uncertainty_ms",
}


def token_count_source(steps: list[dict[str, Any]]) -> str:
    """Where the steps' token counts came from (`server_usage`, or every source seen, comma-separated)."""
    sources = sorted({name for step in steps for name in step.get("token_count_sources", {})})
    return ",".join(sources) if sources else "none"


def build_summary(
    spec: JobSpec,
    *,
    engine_id: str,
    motor: str,
    motor_version: str,
    config: str,
    steps: list[dict[str, Any]],
    knee: dict[str, Any] | None,
    provenance: dict[str, Any],
    harness_version: str,
) -> dict[str, Any]:
    """Assemble the summary of one engine's sweep (pure: no I/O)."""
    at_knee = {k: knee.get(k) for k in KNEE_KEYS} if knee is not None else None
    return {
        "harness": "raybench",
        "harness_version": harness_version,
        "model": spec.model.name,
        "precision": spec.model.precision,
        "hardware": spec.hardware,
        "dataset": spec.workload.kind,
        "slo": {"ttft_p99_ms": spec.slo.ttft_p99_ms, "itl_p50_ms": spec.slo.itl_p50_ms},
        "motor": motor,
        "motor_version": motor_version,
        "concurrency_sweep": [s["concurrency"] for s in steps],
        "results_at_knee": at_knee,
        "engine_id": engine_id,
        "config": config,
        "defensible_capacity_tok_s": knee.get("goodput_tok_s") if knee is not None else None,
        "slo_full": spec.slo.model_dump(mode="json"),
        "steps": steps,
        "definitions": {**DEFINITIONS, "token_count_source": token_count_source(steps)},
        "provenance": provenance,
        "summary_version": SUMMARY_VERSION,
    }
