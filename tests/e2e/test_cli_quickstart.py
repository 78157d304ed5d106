"""The quickstart as a user runs it: the CLI starts an embedded Ray, prints the table and the knee."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_cli_end_to_end(tmp_path: Path) -> None:
    cmd = [
        sys.executable, "-m", "raybench", "run", str(ROOT / "jobs" / "quickstart.yaml"), "--output", str(tmp_path),
        "--set", "load.steps=[4, 16, 32]", "--set", "load.duration_s=2", "--set", "load.warmup_requests=8",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "embedded local Ray (127.0.0.1)" in out
    assert "ready at http://127.0.0.1:" in out, "the engine must listen on loopback only"
    assert "TTFT P99 ms" in out and "Goodput %" in out
    # 70B FP8 on 4x H100 with max_num_seqs 16: the batch saturates past 16, TTFT P99 breaks the SLO.
    assert "sim-vllm: knee at concurrency 16" in out
    runs = [p for p in tmp_path.iterdir() if p.is_dir() and p.name.startswith("quickstart-")]
    assert len(runs) == 1
    summary = json.loads((runs[0] / "engines" / "sim-vllm" / "summary.json").read_text())
    assert summary["results_at_knee"]["concurrency"] == 16
    assert (runs[0] / "_COMPLETE").is_file()


def test_unreachable_endpoint_fails_with_exit_1(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(
        "name: unreachable\nmodel: {name: m}\n"
        "engines: [{kind: endpoint, base_url: 'http://127.0.0.1:9'}]\n"
        "workload: {isl: {mean: 8}, osl: {mean: 4}}\nload: {steps: [1], requests: 2}\n"
        "slo: {ttft_p99_ms: 500, itl_p50_ms: 30}\nfleet: {generators: 1}\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "raybench", "run", str(job), "--output", str(tmp_path / "r")],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "endpoint http://127.0.0.1:9 is not ready" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
