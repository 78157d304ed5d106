"""Fleet figures on this machine: step-start skew across generators, clock-offset uncertainty, and the
agreement of merged percentiles from 3 generators with those of 1 generator at the same load.

    python benchmarks/fleet.py [--requests 300] [--steps 6 12] [--repeats 2]

Brings up a 3-node Ray cluster on 127.0.0.1 (raybench.testing.local_cluster) and a fake OpenAI server
with a fixed TTFT and ITL in its own process (so differences come from the harness, not an engine),
then runs the same request-count sweep with 1 and with 3 generators (SPREAD: one per node), `repeats`
times each, alternating. Prints one JSON document; docs/benchmarks.md ("Fleet (issue 4)") records it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from typing import Any

from rich.console import Console

from raybench.config import parse_job
from raybench.testing.local_cluster import LocalClusterSpec, NodeSpec, start_local_cluster

TTFT_MS, ITL_MS, MODEL = 40.0, 10.0, "fake-model"
_KEYS = ("concurrency", "requests", "ttft_p50_ms", "ttft_p99_ms", "start_skew_ms")


def _fake_server() -> tuple[subprocess.Popen[str], str]:
    argv = [sys.executable, "-m", "raybench.testing.fake_openai", "--port", "0", "--model", MODEL,
            "--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = int(proc.stdout.readline().strip())
    return proc, f"http://127.0.0.1:{port}/v1"


def _job(base_url: str, generators: int, steps: list[int], requests: int, out: str) -> Any:
    return parse_job({
        "name": f"fleet-bench-{generators}g", "model": {"name": MODEL},
        "engines": [{"kind": "endpoint", "id": "fake", "base_url": base_url}],
        "workload": {"isl": {"mean": 64, "std": 0}, "osl": {"mean": 16, "std": 0}, "seed": 1},
        "load": {"steps": steps, "requests": requests, "warmup_requests": 2 * max(steps)},
        "slo": {"ttft_p99_ms": 1000, "itl_p50_ms": 100},
        "fleet": {"generators": generators, "num_cpus_per_generator": 0.5}, "output": {"uri": out},
    })  # fmt: skip


def _run(spec: Any) -> dict[str, Any]:
    from raybench.sweep import run_job

    result = run_job(spec, console=Console(quiet=True))
    summary = result.summaries["fake"]
    offsets = summary["provenance"]["clock_offsets"]
    return {
        "steps": [{k: s[k] for k in _KEYS} for s in summary["steps"]],
        "clock_uncertainty_us": [o["uncertainty_ns"] / 1e3 for o in offsets],
        "nodes": len({o["node_id"] for o in offsets}),
    }


def _agreement(one: list[dict[str, Any]], three: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for a, b in zip(one, three):
        rows.append({
            "concurrency": a["concurrency"], "requests_1g": a["requests"], "requests_3g": b["requests"],
            "ttft_p50_diff_ms": round(b["ttft_p50_ms"] - a["ttft_p50_ms"], 3),
            "ttft_p99_diff_ms": round(b["ttft_p99_ms"] - a["ttft_p99_ms"], 3),
        })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--steps", type=int, nargs="+", default=[6, 12])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    spec = LocalClusterSpec(head=NodeSpec(name="head"), workers=[NodeSpec(name="w1"), NodeSpec(name="w2")])
    cluster = start_local_cluster(spec)
    server, base_url = _fake_server()
    runs: dict[int, list[dict[str, Any]]] = {1: [], 3: []}
    try:
        with tempfile.TemporaryDirectory() as out:
            for _ in range(args.repeats):
                for generators in (3, 1):
                    runs[generators].append(_run(_job(base_url, generators, args.steps, args.requests, out)))
    finally:
        server.terminate()
        import ray

        ray.shutdown()
        cluster.shutdown()
    skews = [s["start_skew_ms"] for r in runs[3] for s in r["steps"] if s["start_skew_ms"] is not None]
    uncert = [u for r in runs[1] + runs[3] for u in r["clock_uncertainty_us"]]
    report = {
        "server": {"ttft_ms": TTFT_MS, "itl_ms": ITL_MS},
        "start_skew_ms": {"max": max(skews), "median": statistics.median(skews), "samples": len(skews)},
        "clock_uncertainty_us": {"max": max(uncert), "median": statistics.median(uncert)},
        "generator_nodes_3g": [r["nodes"] for r in runs[3]],
        "agreement_3g_vs_1g": [_agreement(a["steps"], b["steps"]) for a, b in zip(runs[1], runs[3])],
        "agreement_1g_vs_1g": _agreement(runs[1][0]["steps"], runs[1][-1]["steps"]) if args.repeats > 1 else None,
        "runs": runs,
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
