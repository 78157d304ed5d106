"""Kill the driver process mid-run (SIGKILL to its process group), resume it, and find every step's
records whole: no record missing, none duplicated, completed steps not re-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
import yaml

from raybench.results.schema import select_attempt

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

REQUESTS = 40
STEP_PROMPT_BASE = 10_000_000  # step k's prompt numbers start at (k + 1) x this (raybench.sweep.step)
JOB = {
    "name": "resumable", "model": {"name": "sim-model"},
    "engines": [{"kind": "simulated", "id": "sim", "max_num_seqs": 32}],
    "workload": {"isl": {"mean": 64, "std": 0}, "osl": {"mean": 24, "std": 0}, "seed": 5},
    "load": {"steps": [2, 4, 6], "requests": REQUESTS, "warmup_requests": 4},
    "slo": {"ttft_p99_ms": 2000, "itl_p50_ms": 100}, "fleet": {"generators": 2, "num_cpus_per_generator": 0.5},
}  # fmt: skip


def _raybench(args: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # an embedded Ray of its own
    return subprocess.Popen([sys.executable, "-m", "raybench", *args], cwd=cwd, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip


def _wait_for(path_glob: str, root: Path, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not list(root.glob(path_glob)):
        assert proc.poll() is None, f"the run ended early: {proc.stdout.read().decode() if proc.stdout else ''}"
        assert time.monotonic() < deadline, f"{path_glob} never appeared"
        time.sleep(0.1)


def test_killed_driver_resumes_without_missing_or_duplicate_records(tmp_path: Path) -> None:
    out = tmp_path / "results"
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({**JOB, "output": {"uri": str(out)}}))
    first = _raybench(["run", str(job)], tmp_path)
    try:
        _wait_for("*/engines/sim/steps/step=0.json", out, first, 240)
        time.sleep(0.5)  # step 1 is in flight now
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the driver and the embedded Ray it started
        first.wait(timeout=30)
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    assert not (run_dir / "_COMPLETE").exists()
    marker0 = json.loads((run_dir / "engines/sim/steps/step=0.json").read_text())

    hint = _raybench(["runs", str(out), "--status", "incomplete"], tmp_path)
    assert run_dir.name in hint.communicate(timeout=60)[0].decode()

    second = _raybench(["run", str(job), "--resume", run_dir.name], tmp_path)
    output = second.communicate(timeout=300)[0].decode()
    assert second.returncode == 0, output
    assert "steps [0]" in output or "steps [0, 1]" in output, output  # completed steps are skipped
    assert (run_dir / "_COMPLETE").is_file()
    assert json.loads((run_dir / "engines/sim/steps/step=0.json").read_text()) == marker0, "step 0 was re-run"

    summary = json.loads((run_dir / "engines/sim/summary.json").read_text())
    assert [s["step_index"] for s in summary["steps"]] == [0, 1, 2]
    table = ds.dataset(run_dir / "engines/sim/records", format="parquet").to_table()
    for k in range(3):
        marker = json.loads((run_dir / f"engines/sim/steps/step={k}.json").read_text())
        step = select_attempt(table.filter(pc.equal(table.column("step_index"), k)), marker["attempt"])
        ids = step.column("request_id").to_pylist()
        assert len(ids) == len(set(ids)) == REQUESTS, f"step {k}: {len(ids)} records, {len(set(ids))} distinct"
        numbers = {int(i.rsplit(":", 1)[1]) - (k + 1) * STEP_PROMPT_BASE for i in ids}
        assert numbers == set(range(REQUESTS)), f"step {k} has gaps"
        assert summary["steps"][k]["requests"] == REQUESTS and summary["steps"][k]["attempt"] == marker["attempt"]
