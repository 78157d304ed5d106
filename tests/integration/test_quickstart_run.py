"""The quickstart job end to end on a real 3-node local Ray: records, summary, and their agreement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from raybench.config import load_job
from raybench.metrics import Window, compute_step
from raybench.sweep import run_job

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
ARTICLE_KEYS = {
    "harness", "harness_version", "model", "precision", "hardware", "dataset", "slo", "motor",
    "motor_version", "concurrency_sweep", "results_at_knee",
}  # fmt: skip
KNEE_KEYS = {"concurrency", "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "throughput_tok_s", "goodput_tok_s"}


@pytest.fixture(scope="module")
def quickstart(ray_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Path]:
    out = tmp_path_factory.mktemp("results")
    overrides = ["load.steps=[2, 8, 16, 24]", "load.duration_s=2.5", "load.warmup_requests=10", f"output.uri={out}"]
    spec = load_job(ROOT / "jobs" / "quickstart.yaml", overrides)
    result = run_job(spec)
    return spec, result, out / result.run_id


def test_run_succeeds_and_lays_out_results(quickstart: tuple[Any, Any, Path]) -> None:
    _, result, run_dir = quickstart
    assert result.ok, result.failures
    assert (run_dir / "job.yaml").is_file() and (run_dir / "_COMPLETE").is_file()
    engine = run_dir / "engines" / "sim-vllm"
    assert (engine / "summary.json").is_file()
    assert (engine / "logs" / "replica-0.log").is_file()
    parts = list((engine / "records").glob("step=*/generator=*/part-*.parquet"))
    assert {p.parent.parent.name for p in parts} == {"step=-1", "step=0", "step=1", "step=2", "step=3"}
    assert {p.parent.name for p in parts} == {"generator=g0", "generator=g1"}


def test_one_row_per_request_and_summary_consistent(quickstart: tuple[Any, Any, Path]) -> None:
    spec, result, run_dir = quickstart
    summary = result.summaries["sim-vllm"]
    table = ds.dataset(run_dir / "engines" / "sim-vllm" / "records", format="parquet").to_table()
    ids = table.column("request_id").to_pylist()
    assert len(ids) == len(set(ids)), "a request was written twice"
    warm = table.filter(ds.field("phase") == "warmup")
    assert warm.num_rows == 10
    assert set(table.column("status").to_pylist()) == {"ok"}
    assert set(table.column("token_count_source").to_pylist()) == {"server_usage"}
    for step in summary["steps"]:
        rows = table.filter((ds.field("step_index") == step["step_index"]) & (ds.field("phase") == "measure"))
        assert rows.num_rows == step["requests"] > 0
        again = compute_step(
            rows, window=Window(step["window_start_ns"], step["window_end_ns"]), slo=spec.slo,
            validity=spec.validity, target_concurrency=step["concurrency"], step_index=step["step_index"],
        )  # fmt: skip
        assert again.throughput_tok_s == pytest.approx(step["throughput_tok_s"])
        assert again.ttft_p99_ms == pytest.approx(step["ttft_p99_ms"])
        assert set(rows.column("target_concurrency").to_pylist()) == {step["concurrency"]}


def test_summary_keys_and_knee(quickstart: tuple[Any, Any, Path]) -> None:
    _, result, _ = quickstart
    summary = result.summaries["sim-vllm"]
    assert summary.keys() >= ARTICLE_KEYS
    assert {"steps", "definitions", "provenance"} <= summary.keys()
    assert summary["concurrency_sweep"] == [2, 8, 16, 24]
    assert summary["motor"] == "simulated" and summary["harness"] == "raybench"
    knee = summary["results_at_knee"]
    assert knee is not None and set(knee) == KNEE_KEYS
    held = [s for s in summary["steps"] if s["slo_held"]]
    assert knee["concurrency"] == max(s["concurrency"] for s in held)
    assert not summary["steps"][-1]["slo_held"], "the sweep should go past the knee"
    at_knee = next(s for s in summary["steps"] if s["concurrency"] == knee["concurrency"])
    assert knee["goodput_tok_s"] == at_knee["goodput_tok_s"] == summary["defensible_capacity_tok_s"]
    prov = summary["provenance"]
    assert all(r["base_url"].startswith("http://127.0.0.1:") for r in prov["replicas"]), prov["replicas"]
    for key in ("run_id", "job_spec_sha256", "engine_args", "dataset_fingerprint", "seed", "ray_version",
                "nodes", "gpus", "generators", "clock_offsets", "started_at", "finished_at"):  # fmt: skip
        assert key in prov, key
    assert len(prov["nodes"]) == 3
    assert all(abs(o["uncertainty_ns"]) < 50_000_000 for o in prov["clock_offsets"])


def test_knee_is_batch_saturation_and_the_simulator_is_never_the_bottleneck(quickstart: tuple[Any, Any, Path]) -> None:
    # The default preset (70B FP8 on 4x H100) decodes far below the ITL bound; the knee comes
    # from the batch filling up: the server's own stats show max_num_seqs running and requests
    # waiting, while the simulator process used a small share of one CPU.
    spec, result, run_dir = quickstart
    log = (run_dir / "engines" / "sim-vllm" / "logs" / "replica-0.log").read_text()
    assert "llama-3.1-70b fp8 on 4x h100-sxm" in log
    final = [line for line in log.splitlines() if line.startswith("raybench-sim final stats")]
    assert final, log[-2000:]
    stats = dict(item.split("=", 1) for item in final[-1].split()[3:])
    knee = result.summaries["sim-vllm"]["results_at_knee"]["concurrency"]
    assert int(stats["peak_running"]) == spec.engines[0].max_num_seqs == knee
    assert int(stats["peak_waiting"]) > 0
    assert float(stats["cpu_share_total"]) < 0.5
    steps = result.summaries["sim-vllm"]["steps"]
    shares = [step["server_metrics"]["sim_cpu_share"] for step in steps]
    assert all(share is not None and share < 0.5 for share in shares), shares  # per step, from /metrics
    past = [step["server_metrics"] for step in steps if step["concurrency"] > knee]
    assert past and all(m["running_requests_max"] == knee and m["waiting_requests_max"] > 0 for m in past), past
