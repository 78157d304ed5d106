"""Summaries shaped like the article's tables, and run folders on disk, for the report tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# The article's saturation table (vLLM FP8, 4xH100): concurrency, TTFT P99, ITL P50, throughput, goodput.
ARTICLE_VLLM = [
    (8, 210, 14, 5200, 5200),
    (16, 370, 18, 9800, 9800),
    (32, 420, 18, 12500, 12200),
    (48, 680, 26, 13800, 7400),
    (64, 1200, 41, 14100, 2100),
]

FLAGS_CLEAR = {
    "client_saturated": False,
    "error_rate_exceeded": False,
    "too_few_samples": False,
    "clock_uncertain": False,
}


def make_step(
    index: int, concurrency: int, ttft_p99: float, itl_p50: float, thr: float, good: float, **extra: Any
) -> dict[str, Any]:
    step: dict[str, Any] = {
        "step_index": index,
        "concurrency": concurrency,
        "ttft_p50_ms": ttft_p99 / 2,
        "ttft_p99_ms": ttft_p99,
        "itl_p50_ms": itl_p50,
        "throughput_tok_s": thr,
        "goodput_tok_s": good,
        "goodput_pct": 100.0 * good / thr,
        "requests": 1000,
        "slo_held": ttft_p99 <= 500 and itl_p50 <= 30,
        "tpot_ms": {"p50": itl_p50},
        "validity": dict(FLAGS_CLEAR),
        "valid": True,
        "notes": [],
    }
    step.update(extra)
    return step


def make_summary(
    engine_id: str,
    rows: Sequence[tuple[int, float, float, float, float]],
    *,
    motor: str = "vllm",
    config: str = "FP8, chunked prefill",
    hardware: str = "4xH100_SXM_80GB_NVLink",
    model: str = "Llama-3.1-70B-Instruct",
) -> dict[str, Any]:
    steps = [make_step(i, *row) for i, row in enumerate(rows)]
    held = [s for s in steps if s["slo_held"]]
    knee = max(held, key=lambda s: s["concurrency"]) if held else None
    keys = ("concurrency", "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "throughput_tok_s", "goodput_tok_s")
    return {
        "harness": "raybench",
        "harness_version": "0.1.0",
        "model": model,
        "precision": "FP8",
        "hardware": hardware,
        "dataset": "sharegpt",
        "slo": {"ttft_p99_ms": 500.0, "itl_p50_ms": 30.0},
        "motor": motor,
        "motor_version": "0.9",
        "concurrency_sweep": [s["concurrency"] for s in steps],
        "results_at_knee": {k: knee[k] for k in keys} if knee else None,
        "engine_id": engine_id,
        "config": config,
        "steps": steps,
        "definitions": {"itl": "token-weighted inter-token gaps"},
        "provenance": {"run_id": "run-1", "engine_args": {}},
    }


def write_run(root: Path, run_id: str, summaries: Sequence[dict[str, Any]], complete: bool = True) -> Path:
    run = root / run_id
    for s in summaries:
        folder = run / "engines" / s["engine_id"]
        folder.mkdir(parents=True)
        (folder / "summary.json").write_text(json.dumps(s))
    if complete:
        (run / "_COMPLETE").write_text("{}")
    return run


MS = 1_000_000

JOB = {
    "name": "unit",
    "model": {"name": "m", "precision": "bf16"},
    "hardware": "2xGPU",
    "engines": [{"kind": "endpoint", "id": "eng", "base_url": "http://127.0.0.1:9", "config": "c1"}],
    "workload": {"isl": {"mean": 8}, "osl": {"mean": 4}},
    "load": {"steps": [2, 4], "duration_s": 1},
    "slo": {"ttft_p99_ms": 500, "itl_p50_ms": 30, "max_error_rate": 0.2},
    "validity": {"min_measured_requests": 1},
    "fleet": {"generators": 2},
}


def make_request(generator: str, sent_ms: float, ttft_ms: float = 50, itl_ms: float = 10, tokens: int = 3, **kw: Any):
    """One measured record (RECORD_SCHEMA row) with single-token events every ``itl_ms``."""
    sent = round(sent_ms * MS)
    chunks = [sent + round((ttft_ms + i * itl_ms) * MS) for i in range(tokens)]
    row: dict[str, Any] = {
        "run_id": "run",
        "engine_id": "eng",
        "step_index": 0,
        "generator_id": generator,
        "node_id": "n0",
        "request_id": f"{generator}-{sent_ms}",
        "phase": "measure",
        "target_concurrency": 2,
        "target_rate_per_s": None,
        "scheduled_ns": sent,
        "sent_ns": sent,
        "first_chunk_ns": chunks[0] if chunks else None,
        "first_token_ns": chunks[0] if chunks else None,
        "last_token_ns": chunks[-1] if chunks else None,
        "done_ns": (chunks[-1] if chunks else sent) + MS,
        "chunk_ns": chunks,
        "chunk_tokens": [1] * tokens,
        "input_tokens": 8,
        "output_tokens": tokens,
        "token_count_source": "server_usage",
        "status": "ok",
        "http_status": 200,
        "error_type": None,
        "error_message": None,
        "wall_offset_ns": 0,
        "prompt_fingerprint": "fp",
    }
    row.update(kw)
    return row


def write_records(run: Path, engine_id: str, step: int, rows: Sequence[dict[str, Any]]) -> None:
    """One Parquet part per generator under the MEASUREMENT.md layout."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from raybench.results.schema import RECORD_SCHEMA

    for generator in sorted({r["generator_id"] for r in rows}):
        folder = run / "engines" / engine_id / "records" / f"step={step}" / f"generator={generator}"
        folder.mkdir(parents=True, exist_ok=True)
        part = [r | {"step_index": step} for r in rows if r["generator_id"] == generator]
        pq.write_table(pa.Table.from_pylist(part, schema=RECORD_SCHEMA), folder / "part-00001.parquet")
