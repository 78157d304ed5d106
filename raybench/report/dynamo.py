"""Dynamo in a report: aggregated vs disaggregated deployments side by side, and each worker role's metrics.

Dynamo runs are recognised by their engine args (`kind: dynamo`). The side-by-side table puts each Dynamo
engine's topology and router next to its knee figures; the per-role table reads the stored server metrics
of the knee step (the last step without a knee) and sums them per role (frontend, aggregated, prefill,
decode), mapping each scraped replica to its role through the run's provenance.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from raybench.errors import StorageError
from raybench.report.runs import EngineResult
from raybench.report.tables import Column, Report
from raybench.results.schema import SERVER_METRICS_SCHEMA
from raybench.results.store import ResultStore

__all__ = ["DYNAMO_COLUMNS", "ROLE_COLUMNS", "dynamo_sections", "role_rows"]

DYNAMO_COLUMNS = (
    Column("engine", "Engine", None),
    Column("backend", "Backend", None),
    Column("topology", "Topology", None),
    Column("router", "Router", None),
    Column("knee_concurrency", "Knee conc.", 0),
    Column("throughput_tok_s", "Throughput tok/s", 0),
    Column("ttft_p50_ms", "TTFT P50 ms"),
    Column("ttft_p99_ms", "TTFT P99 ms"),
    Column("itl_p50_ms", "ITL P50 ms", 2),
    Column("goodput_tok_s", "Goodput tok/s", 0),
    Column("goodput_pct", "Goodput %"),
)

ROLE_COLUMNS = (
    Column("engine", "Engine", None),
    Column("role", "Role", None),
    Column("processes", "Processes", 0),
    Column("concurrency", "At conc.", 0),
    Column("running_mean", "Running (mean)", 1),
    Column("waiting_mean", "Waiting (mean)", 1),
    Column("kv_usage_pct", "KV usage %", 1),
    Column("requests", "Requests served", 0),
    Column("ttft_mean_ms", "Engine TTFT mean ms", 1),
)

_ROLE_METRICS = {  # role -> (running, waiting) metric names as raybench stores them
    "frontend": ("running_requests", "waiting_requests"),
    "worker": ("worker_running_requests", "worker_waiting_requests"),
}


def _engine_args(result: EngineResult) -> dict[str, Any]:
    args = (result.summary.get("provenance") or {}).get("engine_args") or {}
    return args if isinstance(args, dict) else {}


def _report_step(summary: dict[str, Any]) -> dict[str, Any]:
    """The knee step, else the highest-load step (what the per-role table describes)."""
    steps = summary.get("steps") or []
    knee = (summary.get("results_at_knee") or {}).get("concurrency")
    chosen = [s for s in steps if knee is not None and s.get("concurrency") == knee] or steps[-1:]
    return chosen[-1] if chosen else {}


def dynamo_sections(report: Report) -> list[tuple[str, Sequence[Column], list[dict[str, Any]]]]:
    """The Dynamo tables of a report; none when no engine in it is a Dynamo deployment."""
    picked = [(label, r, row) for label, r, row in zip(report.labels, report.results, report.pareto)
              if _engine_args(r).get("kind") == "dynamo"]  # fmt: skip
    if not picked:
        return []
    side = []
    for label, result, row in picked:
        args = _engine_args(result)
        side.append({**row, "engine": label, "backend": args.get("backend"), "topology": args.get("topology"),
                     "router": args.get("router_mode")})  # fmt: skip
    roles = [r for label, result, _ in picked for r in role_rows(result, label)]
    return [
        ("Dynamo — aggregated vs disaggregated, each at its knee", DYNAMO_COLUMNS, side),
        ("Dynamo — per-role server metrics (knee step, else the last step)", ROLE_COLUMNS, roles),
    ]


def role_rows(result: EngineResult, label: str) -> list[dict[str, Any]]:
    """One row per role of `result`'s deployment, from its stored server metrics at the report step."""
    step = _report_step(result.summary)
    replicas = (result.summary.get("provenance") or {}).get("replicas") or []
    role_of = {r["metrics_replica"]: r.get("role", "?") for r in replicas if r.get("metrics_replica")}
    if not step or not role_of:
        return []
    rows = _read_metrics(result, int(step.get("step_index", 0)))
    by_role: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_role[role_of.get(row["replica"], "?")].append(row)
    out = []
    for role in dict.fromkeys(role_of.values()):
        kind = "frontend" if role == "frontend" else "worker"
        samples = by_role.get(role, [])
        running, waiting = _ROLE_METRICS[kind]
        ttft_sum, ttft_count = _delta(samples, "worker_ttft_seconds_sum"), _delta(samples, "worker_ttft_seconds_count")
        out.append({
            "engine": label, "role": role, "processes": sum(1 for r in role_of.values() if r == role),
            "concurrency": step.get("concurrency"), "running_mean": _summed_mean(samples, running),
            "waiting_mean": _summed_mean(samples, waiting),
            "kv_usage_pct": _pct(_mean(samples, "worker_kv_cache_usage")) if kind == "worker" else None,
            "requests": _delta(samples, "worker_requests_total") if kind == "worker" else None,
            "ttft_mean_ms": ttft_sum / ttft_count * 1000 if ttft_sum is not None and ttft_count else None,
        })  # fmt: skip
    return out


def _read_metrics(result: EngineResult, step_index: int) -> list[dict[str, Any]]:
    store = ResultStore(result.run_uri)
    try:
        table = store.read_table(f"engines/{result.engine_id}/server_metrics/step={step_index}",
                                 schema=SERVER_METRICS_SCHEMA)  # fmt: skip
    except StorageError:
        return []
    return [r for r in table.to_pylist() if r["step_index"] == step_index]


def _series(samples: list[dict[str, Any]], metric: str) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for s in samples:
        if s["metric"] == metric:
            out[s["replica"]].append((s["scraped_ns"], s["value"]))
    return out


def _summed_mean(samples: list[dict[str, Any]], metric: str) -> float | None:
    """A gauge's mean per process, summed over the role's processes (e.g. requests running in the role)."""
    series = _series(samples, metric)
    return sum(sum(v for _, v in points) / len(points) for points in series.values()) if series else None


def _mean(samples: list[dict[str, Any]], metric: str) -> float | None:
    values = [v for points in _series(samples, metric).values() for _, v in points]
    return sum(values) / len(values) if values else None


def _delta(samples: list[dict[str, Any]], metric: str) -> float | None:
    """A counter's growth over the step, summed over the role's processes."""
    spans = [max(p)[1] - min(p)[1] for p in _series(samples, metric).values() if len(p) >= 2]
    return sum(spans) if spans else None


def _pct(value: float | None) -> float | None:
    return None if value is None else value * 100
