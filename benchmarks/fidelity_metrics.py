"""Reported and true figures for benchmarks/fidelity.py: raybench's from its raw records (MEASUREMENT.md
definitions), the truth from the fake server's write instants. Pure functions over plain dicts."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["raybench_figures", "truth_figures"]


def _pct(values: list[float] | np.ndarray, q: float) -> float:
    arr = np.asarray(values, dtype=np.float64)
    return float(np.percentile(arr, q)) if arr.size else float("nan")


def _itl_ms(chunk_lists: list[list[int]], token_lists: list[list[int]]) -> np.ndarray:
    """Token-weighted inter-token gaps (ms): each gap divided by the tokens of the later event."""
    parts = []
    for chunks, tokens in zip(chunk_lists, token_lists):
        if len(chunks) < 2:
            continue
        gaps = np.diff(np.asarray(chunks, dtype=np.int64)) / 1e6
        later = np.asarray(tokens[1:], dtype=np.int64)
        parts.append(np.repeat(gaps / later, later))
    return np.concatenate(parts) if parts else np.empty(0)


def _tokens_in(chunk_lists: list[list[int]], token_lists: list[list[int]], start_ns: int, end_ns: int) -> int:
    total = 0
    for chunks, tokens in zip(chunk_lists, token_lists):
        arr = np.asarray(chunks, dtype=np.int64)
        inside = (arr >= start_ns) & (arr < end_ns)
        total += int(np.asarray(tokens, dtype=np.int64)[inside].sum())
    return total


def raybench_figures(report: dict[str, Any]) -> dict[str, float]:
    """TTFT/ITL percentiles, window throughput, queue/send lag, achieved rate, as raybench computes them."""
    rows = [r for r in report["records"] if r["status"] == "ok"]
    ttft = [(r["first_token_ns"] - r["sent_ns"]) / 1e6 for r in rows]
    from_schedule = [(r["first_token_ns"] - r["scheduled_ns"]) / 1e6 for r in rows]
    lag = [(r["sent_ns"] - r["scheduled_ns"]) / 1e6 for r in report["records"]]
    chunks = [r["chunk_ns"] for r in rows]
    tokens = [r["chunk_tokens"] for r in rows]
    start, end = report["reached_target_ns"], report["stopped_issuing_ns"]
    sent = sorted(r["sent_ns"] for r in report["records"])
    figures = {
        "requests": float(len(report["records"])),
        "ok": float(len(rows)),
        "ttft_p50_ms": _pct(ttft, 50),
        "ttft_p99_ms": _pct(ttft, 99),
        "ttft_sched_p99_ms": _pct(from_schedule, 99),
        "itl_p50_ms": _pct(_itl_ms(chunks, tokens), 50),
        "send_lag_p50_ms": _pct(lag, 50),
        "send_lag_p99_ms": _pct(lag, 99),
        "loop_lag_p99_ms": float(report["lag_p99_ms"]),
        "cpu_share": float(report["cpu_share"]),
        "cpu_us_per_chunk": report["cpu_s"] * 1e6 / max(sum(len(c) for c in chunks), 1),
        "window": (start, end),
    }
    if start is not None and end is not None and end > start:
        figures["throughput_tok_s"] = _tokens_in(chunks, tokens, start, end) / ((end - start) / 1e9)
    if len(sent) > 1:
        figures["achieved_rate_per_s"] = (len(sent) - 1) / ((sent[-1] - sent[0]) / 1e9)
    return figures


def truth_figures(
    streams: list[dict[str, Any]], window: tuple[int, int] | None = None, arrival: str = "received_ns"
) -> dict[str, float]:
    """The same figures from what the server wrote: TTFT from the request's arrival to its first chunk written.
    `arrival` "received_ns": the kernel's receive stamp (raybench.testing.fake_http); "read_ns": when the
    fake's loop read it (includes the fake's own intake queueing)."""
    done = [s for s in streams if s["chunk_ns"]]
    ttft = [(s["chunk_ns"][0] - s[arrival]) / 1e6 for s in done]
    chunks = [s["chunk_ns"] for s in done]
    tokens = [s["chunk_tokens"] for s in done]
    figures = {
        "streams": float(len(streams)),
        "ttft_p50_ms": _pct(ttft, 50),
        "ttft_p99_ms": _pct(ttft, 99),
        "itl_p50_ms": _pct(_itl_ms(chunks, tokens), 50),
    }
    if window is None and done:  # whole run: first request received to last chunk written
        window = (min(s["received_ns"] for s in done), max(s["chunk_ns"][-1] for s in done) + 1)
    if window is not None and window[1] > window[0]:
        figures["throughput_tok_s"] = _tokens_in(chunks, tokens, *window) / ((window[1] - window[0]) / 1e9)
    received = sorted(s["received_ns"] for s in streams)
    if len(received) > 1:
        figures["achieved_rate_per_s"] = (len(received) - 1) / ((received[-1] - received[0]) / 1e9)
    chunks_total = sum(len(c) for c in chunks)
    if done:
        span_s = (max(s["chunk_ns"][-1] for s in done) - min(s["received_ns"] for s in done)) / 1e9
        figures["chunks_per_s"] = chunks_total / span_s if span_s > 0 else float("nan")
    return figures
