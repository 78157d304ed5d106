"""Benchmark: summarize 1,000,000 synthetic request records from Parquet; wall time and peak RSS.

    python benchmarks/summarize.py                      # 1,000,000 records, 10 steps, 4 generators
    python benchmarks/summarize.py --records 200000     # smaller

Writes a run folder (job.yaml + RECORD_SCHEMA Parquet parts per step and generator) under
--dir (default /tmp/raybench-bench-summarize), then summarizes it in a fresh child process
with ``raybench.report.records.summarize_engine`` — the path ``raybench report`` takes when it
rebuilds a summary from records — and reports the child's wall time and peak RSS, so the
figures cover reading, metrics, knee and summary, and nothing of the generation.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from raybench.results.schema import RECORD_SCHEMA

MS = 1_000_000
S = 1_000_000_000
ENGINE = "bench"


def _job(steps: list[int]) -> dict[str, object]:
    return {
        "name": "bench",
        "model": {"name": "synthetic-model", "precision": "bf16"},
        "hardware": "1xGPU",
        "engines": [{"kind": "endpoint", "id": ENGINE, "base_url": "http://127.0.0.1:9"}],
        "workload": {"isl": {"mean": 256}, "osl": {"mean": 64}},
        "load": {"steps": steps, "duration_s": 60},
        "slo": {"ttft_p99_ms": 500, "itl_p50_ms": 30},
        "fleet": {"generators": 4},
    }


def _part(rng: np.random.Generator, n: int, step: int, gen: int, concurrency: int, mean_tokens: int) -> pa.Table:
    """n records of one generator in one step: realistic TTFT/ITL growing with concurrency, 1 % failures."""
    sent = np.sort(rng.integers(0, 60 * S, n))
    ok = rng.random(n) >= 0.01
    tokens = np.where(ok, np.clip(rng.poisson(mean_tokens, n), 1, None), 0)
    load = 1 + concurrency / 64
    ttft = (rng.lognormal(np.log(40 * load), 0.5, n) * MS).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(tokens)))
    gaps = (rng.gamma(4.0, 5.0 * load / 4.0, int(offsets[-1])) * MS).astype(np.int64)
    gaps[offsets[:-1][tokens > 0]] = 0  # each request's first event is its first token
    row_of_event = np.repeat(np.arange(n), tokens)
    chunk_ns = (sent + ttft)[row_of_event] + _segmented_cumsum(gaps, offsets)
    last = np.where(tokens > 0, chunk_ns[np.maximum(offsets[1:] - 1, 0)], 0)
    first = np.where(tokens > 0, sent + ttft, 0)
    done = np.where(ok, last + MS, sent + 5 * MS)
    ids = pc.binary_join_element_wise(f"s{step}-g{gen}-", pa.array(np.arange(n)).cast(pa.string()), "")
    status = np.where(ok, "ok", "http_error")
    columns = {
        "run_id": pa.array(["bench"] * n),
        "engine_id": pa.array([ENGINE] * n),
        "step_index": pa.array(np.full(n, step, np.int32)),
        "generator_id": pa.array([f"g{gen}"] * n),
        "node_id": pa.array(["n0"] * n),
        "request_id": ids,
        "phase": pa.array(["measure"] * n),
        "target_concurrency": pa.array(np.full(n, concurrency, np.int32)),
        "target_rate_per_s": pa.nulls(n, pa.float64()),
        "scheduled_ns": pa.array(sent - rng.integers(0, MS // 10, n)),
        "sent_ns": pa.array(sent),
        "first_chunk_ns": pa.array(first, mask=tokens == 0),
        "first_token_ns": pa.array(first, mask=tokens == 0),
        "last_token_ns": pa.array(last, mask=tokens == 0),
        "done_ns": pa.array(done),
        "chunk_ns": pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(chunk_ns)),
        "chunk_tokens": pa.ListArray.from_arrays(
            pa.array(offsets.astype(np.int32)), pa.array(np.ones(offsets[-1], np.int32))
        ),
        "input_tokens": pa.array(np.full(n, 256, np.int32)),
        "output_tokens": pa.array(tokens.astype(np.int32)),
        "token_count_source": pa.array(["server_usage"] * n),
        "status": pa.array(status),
        "http_status": pa.array(np.where(ok, 200, 500).astype(np.int32)),
        "error_type": pa.array(np.where(ok, None, "ServerError")),
        "error_message": pa.array(np.where(ok, None, "internal error")),
        "wall_offset_ns": pa.array(np.full(n, 1_000_000_000 * S + gen * 1000, np.int64)),
        "prompt_fingerprint": pa.array(["fp"] * n),
    }
    return pa.Table.from_pydict(columns, schema=RECORD_SCHEMA)


def _segmented_cumsum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Cumulative sum restarting at every segment start (offsets[:-1])."""
    total = np.cumsum(values)
    starts = offsets[:-1][offsets[:-1] < offsets[1:]]
    base = np.zeros_like(values)
    base[starts] = total[starts] - values[starts]
    return total - np.maximum.accumulate(base)


def generate(root: Path, records: int, steps: int, generators: int, mean_tokens: int) -> Path:
    """Write a run folder of ``records`` measured records; returns it."""
    shutil.rmtree(root, ignore_errors=True)
    run = root / "bench-run"
    concurrencies = [2**k for k in range(steps)]
    (run).mkdir(parents=True)
    (run / "job.yaml").write_text(yaml.safe_dump(_job(concurrencies)))
    rng = np.random.default_rng(0)
    per_part = records // (steps * generators)
    for step, concurrency in enumerate(concurrencies):
        for gen in range(generators):
            folder = run / "engines" / ENGINE / "records" / f"step={step}" / f"generator=g{gen}"
            folder.mkdir(parents=True)
            table = _part(rng, per_part, step, gen, concurrency, mean_tokens)
            pq.write_table(table, folder / "part-00001.parquet", compression="zstd")
    return run


def summarize_child(run: Path, workers: int) -> None:
    """In the child: summarize the run, print one JSON line with the figures."""
    import raybench.sweep.summary  # noqa: F401  (imports Ray: import time is not summarizing time)
    from raybench.report.records import summarize_engine
    from raybench.results.store import ResultStore

    usage = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    summary = summarize_engine(ResultStore(str(run)), ENGINE, workers=workers)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    records = sum(s["requests"] for s in summary["steps"])
    knee = (summary["results_at_knee"] or {}).get("concurrency")
    events = sum(s["itl_ms"]["count"] for s in summary["steps"])
    print(
        json.dumps(
            {
                "records": records,
                "itl_gaps": events,
                "seconds": round(elapsed, 2),
                "cpu_seconds": round(cpu_s, 2),
                "peak_rss_mib": round(rss_mib),
                "knee": knee,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--generators", type=int, default=4)
    parser.add_argument("--mean-tokens", type=int, default=64, help="mean output tokens (events) per request")
    parser.add_argument("--workers", type=int, default=2, help="steps summarized at once (threads)")
    parser.add_argument("--repeat", type=int, default=1, help="summarize this many times (fresh process each)")
    parser.add_argument("--reuse", action="store_true", help="summarize the records already under --dir")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/raybench-bench-summarize"))
    parser.add_argument("--summarize-only", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.summarize_only:
        summarize_child(args.summarize_only, args.workers)
        return
    t0 = time.perf_counter()
    run = args.dir / "bench-run"
    if not (args.reuse and run.is_dir()):
        run = generate(args.dir, args.records, args.steps, args.generators, args.mean_tokens)
    size_mib = sum(p.stat().st_size for p in run.rglob("*.parquet")) / 2**20
    took = time.perf_counter() - t0
    print(f"records ready in {took:.1f} s: {run} ({size_mib:,.0f} MiB Parquet)")
    cmd = [sys.executable, __file__, "--summarize-only", str(run), "--workers", str(args.workers)]
    for _ in range(args.repeat):
        child = subprocess.run(cmd, capture_output=True, text=True, check=True)
        figures = json.loads(child.stdout.strip().splitlines()[-1])
        print(
            f"summarized {figures['records']:,} records ({figures['itl_gaps']:,} token events) in "
            f"{figures['seconds']} s wall ({figures['cpu_seconds']} s CPU) with {args.workers} worker(s), "
            f"peak RSS {figures['peak_rss_mib']:,} MiB "
            f"(knee at concurrency {figures['knee']})"
        )


if __name__ == "__main__":
    main()
