"""The report's Dynamo tables: side by side from summaries, per-role sums from stored server metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from raybench.report.dynamo import dynamo_sections, role_rows
from raybench.report.runs import EngineResult
from raybench.report.tables import Report
from raybench.results.schema import SERVER_METRICS_SCHEMA
from raybench.results.store import ResultStore

S = 1_000_000_000


def _summary(topology: str, roles: list[str]) -> dict[str, Any]:
    replicas = [{"role": r, "metrics_replica": f"replica-{i}"} for i, r in enumerate(["frontend", *roles])]
    return {
        "steps": [{"step_index": 0, "concurrency": 2}, {"step_index": 1, "concurrency": 4}],
        "results_at_knee": {"concurrency": 2},
        "provenance": {"engine_args": {"kind": "dynamo", "backend": "mocker", "topology": topology,
                                       "router_mode": "kv"}, "replicas": [*replicas, {"role": "etcd"}]},
    }  # fmt: skip


def _metrics(store: ResultStore, engine: str, rows: list[tuple[str, str, int, float]]) -> None:
    table = pa.Table.from_pylist(
        [{"step_index": 0, "replica": rep, "scraped_ns": t * S, "metric": m, "source": m, "value": v}
         for rep, m, t, v in rows],
        schema=SERVER_METRICS_SCHEMA,
    )  # fmt: skip
    store.write_table(f"engines/{engine}/server_metrics/step=0/part-0.parquet", table)


def test_roles_sum_their_processes(tmp_path: Path) -> None:
    store = ResultStore(str(tmp_path))
    _metrics(store, "dis", [
        ("replica-0", "running_requests", 0, 2.0), ("replica-0", "running_requests", 1, 4.0),
        ("replica-1", "worker_running_requests", 0, 1.0), ("replica-1", "worker_running_requests", 1, 1.0),
        ("replica-1", "worker_kv_cache_usage", 0, 0.2), ("replica-1", "worker_kv_cache_usage", 1, 0.4),
        ("replica-1", "worker_requests_total", 0, 10.0), ("replica-1", "worker_requests_total", 1, 30.0),
        ("replica-2", "worker_running_requests", 0, 3.0), ("replica-2", "worker_running_requests", 1, 5.0),
        ("replica-2", "worker_ttft_seconds_sum", 0, 1.0), ("replica-2", "worker_ttft_seconds_sum", 1, 1.5),
        ("replica-2", "worker_ttft_seconds_count", 0, 10.0), ("replica-2", "worker_ttft_seconds_count", 1, 20.0),
    ])  # fmt: skip
    result = EngineResult("run", str(tmp_path), "dis", _summary("disaggregated 1P+1D", ["prefill", "decode"]))
    rows = {r["role"]: r for r in role_rows(result, "dis")}
    assert list(rows) == ["frontend", "prefill", "decode"]  # etcd has no metrics URL: not a row
    assert rows["frontend"]["running_mean"] == 3.0 and rows["frontend"]["kv_usage_pct"] is None
    assert rows["prefill"]["requests"] == 20.0 and abs(rows["prefill"]["kv_usage_pct"] - 30.0) < 1e-9
    assert rows["decode"]["running_mean"] == 4.0 and abs(rows["decode"]["ttft_mean_ms"] - 50.0) < 1e-9
    assert rows["decode"]["concurrency"] == 2  # the knee step


def test_sections_only_for_dynamo_engines(tmp_path: Path) -> None:
    agg = EngineResult("run", str(tmp_path), "agg", _summary("aggregated x2", ["aggregated", "aggregated"]))
    other = EngineResult("run", str(tmp_path), "vllm", {"provenance": {"engine_args": {"kind": "vllm"}}})
    pareto = [{"engine": "agg", "throughput_tok_s": 100.0}, {"engine": "vllm", "throughput_tok_s": 90.0}]
    report = Report(results=[agg, other], labels=["agg", "vllm"], pareto=pareto, saturation={}, best=[])
    (title, _, side), (_, _, roles) = dynamo_sections(report)
    assert "aggregated vs disaggregated" in title
    assert side == [{**pareto[0], "backend": "mocker", "topology": "aggregated x2", "router": "kv"}]
    assert [(r["role"], r["processes"], r["running_mean"]) for r in roles] == [
        ("frontend", 1, None),
        ("aggregated", 2, None),
    ]  # fmt: skip  (no metrics stored: empty cells)
    assert dynamo_sections(Report(results=[other], labels=["vllm"], pareto=pareto[1:], saturation={}, best=[])) == []
