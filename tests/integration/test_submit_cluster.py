"""The cluster path as a user walks it, on a `ray start` head plus worker bound to 127.0.0.1: `cluster check`,
plain `ray job submit --working-dir . -- raybench run`, `raybench submit`, and jobs refused for want of GPUs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from raybench.testing.ray_start import RAY_CLI, LoopbackRayCluster, NodeSpec, start_ray_cluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[2]
QUICK = [  # the quickstart, short: one generator, one 2-second step
    "--set", "load.steps=[2]", "--set", "load.duration_s=2", "--set", "load.warmup_requests=4",
    "--set", "fleet.generators=1",
]  # fmt: skip
TOO_BIG = ["--set", "engines.0.tensor_parallel_size=2"]  # 2 replicas x 2 GPUs; the cluster has 2 GPUs


@pytest.fixture(scope="module")
def cluster() -> Iterator[LoopbackRayCluster]:
    """Head: 2 CPUs, no GPU. Worker: 2 CPUs, 2 (advertised) GPUs, 2 `loadgen`."""
    started = start_ray_cluster(NodeSpec(num_cpus=2), [NodeSpec(num_cpus=2, num_gpus=2, resources={"loadgen": 2})])
    try:
        yield started
    finally:
        started.stop()
        deadline = time.monotonic() + 10
        while started.leftovers() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not started.leftovers(), "processes of the test cluster survived its stop"


def cli(cluster: LoopbackRayCluster, *args: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {**cluster.env(), "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd, env=env)


def raybench(cluster: LoopbackRayCluster, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return cli(cluster, sys.executable, "-m", "raybench", *args, cwd=cwd)


def summary_of(output: Path) -> dict[str, object]:
    [run] = [p for p in output.iterdir() if p.is_dir() and p.name.startswith("quickstart-")]
    assert (run / "_COMPLETE").is_file()
    summary: dict[str, object] = json.loads((run / "engines" / "sim-vllm" / "summary.json").read_text())
    return summary


def test_cluster_check_lists_nodes_and_fits_the_quickstart(cluster: LoopbackRayCluster, tmp_path: Path) -> None:
    proc = raybench(cluster, "cluster", "check", "--address", cluster.dashboard_url, "--json",
                    str(ROOT / "jobs" / "quickstart.yaml"), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["totals"] == {"nodes": 2, "cpus": 4.0, "gpus": 2.0, "loadgen": 2.0, "loadgen_nodes": 1,
                             "gpus_by_type": {"unknown": 2.0}}  # fmt: skip
    assert {n["ip"] for n in out["nodes"]} == {"127.0.0.1"}, "every node must stay on loopback"
    assert out["job"]["fits"] is True and out["job"]["shortfalls"] == []


def test_cluster_check_refuses_a_job_needing_more_gpus(cluster: LoopbackRayCluster, tmp_path: Path) -> None:
    job = str(ROOT / "jobs" / "vllm-llama8b-bf16-2replicas.yaml")
    proc = raybench(cluster, "cluster", "check", "--address", cluster.dashboard_url, job, *TOO_BIG, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Ray cluster at http://127.0.0.1:" in proc.stdout and "does not fit" in proc.stdout
    assert "2 replica(s) x 2 GPU(s) = 4 GPUs; the cluster offers 2 GPU(s)" in proc.stdout
    assert "short by 2 GPU(s)" in proc.stdout


def test_submit_refuses_a_job_needing_more_gpus(cluster: LoopbackRayCluster, tmp_path: Path) -> None:
    from ray.job_submission import JobSubmissionClient

    before = len(JobSubmissionClient(cluster.dashboard_url).list_jobs())
    job = str(ROOT / "jobs" / "vllm-llama8b-bf16-2replicas.yaml")
    proc = raybench(cluster, "submit", job, "--address", cluster.dashboard_url, *TOO_BIG, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "refused" in proc.stderr and "nothing was submitted" in proc.stderr
    assert "short by 2 GPU(s)" in proc.stderr
    assert len(JobSubmissionClient(cluster.dashboard_url).list_jobs()) == before


def test_plain_ray_job_submit_runs_the_quickstart(cluster: LoopbackRayCluster, tmp_path: Path) -> None:
    output = tmp_path / "results"
    proc = cli(cluster, *RAY_CLI, "job", "submit", "--address", cluster.dashboard_url, "--working-dir", str(ROOT),
               "--", "raybench", "run", "jobs/quickstart.yaml", "--output", str(output), *QUICK, cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "using Ray cluster (joined)" in proc.stdout and "ready at http://127.0.0.1:" in proc.stdout
    summary = summary_of(output)
    assert summary["concurrency_sweep"] == [2]


def test_raybench_submit_runs_the_quickstart(cluster: LoopbackRayCluster, tmp_path: Path) -> None:
    output = tmp_path / "results"
    job = tmp_path / "elsewhere" / "my-job.yaml"  # not in any working dir: it travels with the submission
    job.parent.mkdir()
    job.write_text((ROOT / "jobs" / "quickstart.yaml").read_text())
    proc = raybench(cluster, "submit", str(job), "--address", cluster.dashboard_url, "--output", str(output),
                    *QUICK, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "submitted quickstart as Ray job raysubmit_" in proc.stdout
    assert "using Ray cluster (joined)" in proc.stdout, "the job's log must be streamed"
    assert f"results at file://{output}/quickstart-" in proc.stdout.replace("\n", "")
    summary = summary_of(output)
    assert summary["harness"] == "raybench" and summary["concurrency_sweep"] == [2]
