"""Launched engine kinds on the 3-node loopback Ray, against their fakes: readiness, version, provenance,
server metrics, a crash mid-step (failed step with its reason, the run moves on) and no orphan processes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from raybench.config import parse_job
from raybench.deploy.process import wait_group_gone
from raybench.sweep import run_job
from raybench.testing.engines import fake_launcher
from raybench.testing.engines.server import FAKE_VERSION

pytestmark = pytest.mark.integration


def _engine(kind: str, engine_id: str, **env: str) -> dict[str, Any]:
    extra = {"model_path": "/models/tiny.gguf", "precision": "gguf"} if kind == "llamacpp" else {}
    return {
        "kind": kind, "id": engine_id, "launcher": fake_launcher(kind), "num_gpus": 0, "num_cpus": 0.5,
        "max_num_seqs": 4, "env": {"RAYBENCH_FAKE_LOAD_S": "0.3", "RAYBENCH_FAKE_ITL_MS": "20", **env}, **extra,
    }  # fmt: skip


@pytest.fixture(scope="module")
def fake_run(ray_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    out = tmp_path_factory.mktemp("results")
    spec = parse_job({
        "name": "fakes", "model": {"name": "tiny-model", "precision": "bf16"},
        "engines": [
            _engine("vllm", "fake-vllm"),
            _engine("sglang", "fake-sglang", RAYBENCH_FAKE_CRASH_AFTER_REQUESTS="8"),
            _engine("llamacpp", "fake-llamacpp"),
        ],
        "workload": {"isl": {"mean": 16}, "osl": {"mean": 40}},
        "load": {"steps": [2, 4], "duration_s": 2.0, "warmup_requests": 2},
        "slo": {"ttft_p99_ms": 1000, "itl_p50_ms": 100},
        "fleet": {"generators": 1}, "output": {"uri": str(out)},
    })  # fmt: skip
    result = run_job(spec)
    return result, out / result.run_id


def test_fake_vllm_summary_provenance_and_server_metrics(fake_run: tuple[Any, Path]) -> None:
    result, run_dir = fake_run
    summary = result.summaries["fake-vllm"]
    assert summary["motor"] == "vllm" and summary["motor_version"] == FAKE_VERSION
    assert summary["failure"] is None
    replica = summary["provenance"]["replicas"][0]
    assert replica["argv"][: len(fake_launcher("vllm")) + 1] == [*fake_launcher("vllm"), "tiny-model"]
    assert "--tensor-parallel-size" in replica["argv"]
    assert replica["readiness"].startswith("GET /health -> 200")
    assert "RAYBENCH_FAKE_LOAD_S" not in replica["env"]  # only the GPU-relevant subset is recorded
    for step in summary["steps"]:
        metrics = step["server_metrics"]
        assert metrics["samples"] >= 2, metrics
        assert metrics["kv_cache_usage_mean"] is not None
        assert metrics["generation_tokens"] and metrics["generation_tokens"] > 0
        assert metrics["prefix_cache_hit_rate"] == pytest.approx(0.5, abs=0.1)
    table = ds.dataset(run_dir / "engines" / "fake-vllm" / "server_metrics", format="parquet").to_table()
    assert {"running_requests", "kv_cache_usage", "ttft_seconds_sum"} <= set(table.column("metric").to_pylist())
    assert (run_dir / "engines" / "fake-vllm" / "logs" / "replica-0.log").read_text().count("fake vllm: ready") == 1


def test_engine_killed_mid_step_fails_that_step_and_the_run_moves_on(fake_run: tuple[Any, Path]) -> None:
    result, run_dir = fake_run
    assert "fake-sglang" in result.failures
    summary = result.summaries["fake-sglang"]
    assert "exited with status 3" in summary["failure"]["reason"]
    failed = [s for s in summary["steps"] if s.get("failed")]
    assert len(failed) == 1 and failed[0]["step_index"] == summary["failure"]["step_index"]
    assert "simulated fatal CUDA error" in (run_dir / "engines" / "fake-sglang" / "logs" / "replica-0.log").read_text()
    assert result.summaries["fake-llamacpp"]["failure"] is None  # the next engine still ran
    assert result.summaries["fake-llamacpp"]["motor_version"] == f"b0-{FAKE_VERSION}"


def test_no_orphan_processes_after_the_run(fake_run: tuple[Any, Path]) -> None:
    result, _ = fake_run
    pgids = [r["pid"] for s in result.summaries.values() for r in s["provenance"]["replicas"]]
    assert len(pgids) == 3
    assert all(wait_group_gone(pgid, 10.0) for pgid in pgids), "an engine process group outlived the run"


def test_replica_actor_killed_takes_its_engine_group_down(ray_cluster: Any, tmp_path: Path) -> None:
    """As when the driver dies: Ray kills the replica actor without any teardown; the guard notices and
    kills the engine's whole process group."""
    import ray

    from raybench.config.job import ModelSpec
    from raybench.deploy.deployment import EngineDeployment
    from raybench.engines import adapter_for

    spec = parse_job({
        "name": "k", "model": {"name": "tiny-model"}, "engines": [_engine("tgi", "fake-tgi")],
        "workload": {"isl": {"mean": 8}, "osl": {"mean": 8}}, "load": {"steps": [1], "duration_s": 1},
        "slo": {"ttft_p99_ms": 500, "itl_p50_ms": 30},
    })  # fmt: skip
    adapter = adapter_for(spec.engines[0], ModelSpec(name="tiny-model"), "fake-tgi")
    deployment = EngineDeployment(adapter, str(tmp_path))
    deployment.start()
    assert deployment.replicas[0]["engine_version"] == FAKE_VERSION
    (pgid,) = deployment.pgids()
    assert pgid is not None
    for actor in deployment._actors:
        ray.kill(actor, no_restart=True)
    assert wait_group_gone(pgid, 15.0), "the engine outlived its replica actor"
    deployment._actors = []
