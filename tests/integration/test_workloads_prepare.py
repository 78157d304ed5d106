"""Dataset preparation with Ray Data on a real local cluster: the same prompts as in-process preparation,
the Parquet cache next to the results, and a resumed run that reads the cache instead of tokenizing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from raybench.config import parse_job
from raybench.config.workload import ShareGPTWorkloadSpec, TraceWorkloadSpec
from raybench.sweep import run_job
from raybench.testing.tiny_model import build_tiny_model_dir
from raybench.workloads import ShareGPTSource, TraceSource, source_for, workload_fingerprint
from raybench.workloads.prepare import CACHE_DIR, workload_cache

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

_WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog",
    "while",
    "people",
    "write",
    "numbers",
    "and",
    "water",
    "flows",
    "into",
    "time",
]


def _trace(path: Path, count: int) -> str:
    lines = []
    for i in range(count):
        words = " ".join(_WORDS[(i + k) % len(_WORDS)] for k in range(4 + i % 23))
        entry: dict[str, Any] = {"timestamp_ms": 1_000 + 25 * i, "output_tokens": 3 + i % 5, "session_id": f"u{i % 9}"}
        entry.update({"text": f"q{i} {words}"} if i % 3 else {"input_tokens": 5 + i % 40})
        lines.append(json.dumps(entry))
    lines.insert(17, "{broken")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_ray_data_and_local_preparation_give_identical_prompts(ray_cluster: Any, tmp_path: Path) -> None:
    tokenizer = str(build_tiny_model_dir(tmp_path / "tok"))
    path = _trace(tmp_path / "t.jsonl", 3000)
    base = {"kind": "trace", "path": path, "max_isl": 28, "api": "chat"}
    local = source_for(TraceWorkloadSpec.model_validate(base), tokenizer)
    parallel = source_for(TraceWorkloadSpec.model_validate({**base, "ray_data_min_rows": 100}), tokenizer)
    assert isinstance(local, TraceSource) and isinstance(parallel, TraceSource)
    assert local.report.method == "local" and parallel.report.method == "ray_data"
    assert parallel.report.malformed == local.report.malformed == 1
    assert 0 < parallel.report.filtered_out == local.report.filtered_out
    n = local.report.kept
    assert parallel.report.kept == n
    assert [parallel.prompt(i) for i in range(n)] == [local.prompt(i) for i in range(n)]
    assert workload_fingerprint(parallel) == workload_fingerprint(local)
    assert parallel.arrival_offsets_ns(80.0).tolist() == local.arrival_offsets_ns(80.0).tolist()


def test_sharegpt_prepared_with_ray_data_is_the_same(ray_cluster: Any, tmp_path: Path) -> None:
    tokenizer = str(build_tiny_model_dir(tmp_path / "tok"))
    base = {"kind": "sharegpt", "path": str(ROOT / "examples" / "data" / "sharegpt_sample.json"), "max_isl": 400}
    local = source_for(ShareGPTWorkloadSpec.model_validate(base), tokenizer)
    parallel = source_for(ShareGPTWorkloadSpec.model_validate({**base, "ray_data_min_rows": 10}), tokenizer)
    assert isinstance(local, ShareGPTSource) and isinstance(parallel, ShareGPTSource)
    assert (local.preparation()["method"], parallel.preparation()["method"]) == ("local", "ray_data")
    assert parallel.report == local.report and local.report.filtered_out > 0
    assert [parallel.prompt(i) for i in range(local.report.kept)] == [local.prompt(i) for i in range(local.report.kept)]
    assert workload_fingerprint(parallel) == workload_fingerprint(local)


def test_a_resumed_run_reads_the_prepared_cache(ray_cluster: Any, tmp_path: Path) -> None:
    out = tmp_path / "results"
    workload = {"kind": "trace", "path": _trace(tmp_path / "t.jsonl", 400), "ray_data_min_rows": 1}
    spec = parse_job({
        "name": "tr", "model": {"name": "sim-model"}, "engines": [{"kind": "simulated", "id": "sim"}],
        "workload": workload, "load": {"mode": "rate", "rates_per_s": [80], "requests": 20},
        "slo": {"ttft_p99_ms": 2000, "itl_p50_ms": 100}, "fleet": {"generators": 2}, "output": {"uri": str(out)},
    })  # fmt: skip
    first = run_job(spec)
    assert first.ok, first.failures
    prepared = first.summaries["sim"]["provenance"]["workload_prepared"]
    assert prepared["method"] == "ray_data"
    entry = out / CACHE_DIR / prepared["cache_key"]
    assert (entry / "rows.parquet").is_file() and (entry / "meta.json").is_file()
    records = ds.dataset(out / first.run_id / "engines" / "sim" / "records", format="parquet").to_table()
    assert records.num_rows == 20 and set(records.column("session_id").to_pylist()) <= {f"u{i}" for i in range(9)}
    assert len(set(records.column("request_id").to_pylist())) == 20

    (out / first.run_id / "_COMPLETE").unlink()  # as if the driver had stopped before writing the summary
    (out / first.run_id / "engines" / "sim" / "summary.json").unlink()
    resumed = run_job(spec, resume=first.run_id)
    assert resumed.ok and resumed.resumed
    again = resumed.summaries["sim"]["provenance"]
    assert again["workload_prepared"] == {"method": "cache", "cache_key": prepared["cache_key"]}
    assert again["dataset_fingerprint"] == first.summaries["sim"]["provenance"]["dataset_fingerprint"]
    cached = source_for(spec.workload, None, workload_cache(str(out)))
    assert isinstance(cached, TraceSource) and cached.report.method == "cache"
