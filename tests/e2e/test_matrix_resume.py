"""A matrix interrupted after its first cell resumes with the rest; `raybench runs` lists the cells."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def _matrix(tmp_path: Path) -> Path:
    base = yaml.safe_load((ROOT / "jobs" / "quickstart.yaml").read_text())
    spec = {
        "name": "mx", "base": base,
        "models": [{"name": "llama-3.1-8b", "precision": "fp8"}, {"name": "llama-3.1-70b", "precision": "fp8"}],
        "engines": [{"kind": "simulated", "id": "sim", "tp": 4, "max_num_seqs": 8}],
        "configs": {"short": {"load.steps": [2, 8], "load.duration_s": 1.5, "load.warmup_requests": 4,
                              "fleet.generators": 1}},
        "overrides": [{"match": {"model": "llama-3.1-8b"}, "set": {"engines.0.model_preset": "llama-3.1-8b"}}],
        "output": {"uri": str(tmp_path / "results")},
    }  # fmt: skip
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _complete_cells(results: Path) -> list[Path]:
    return sorted(results.glob("mx-*/mx-*/_COMPLETE"))


def test_interrupted_matrix_resumes(tmp_path: Path) -> None:
    matrix = _matrix(tmp_path)
    cmd = [sys.executable, "-m", "raybench", "matrix", str(matrix)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path)
    deadline = time.monotonic() + 180
    while not _complete_cells(tmp_path / "results") and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert _complete_cells(tmp_path / "results"), "the first cell never completed"
    proc.send_signal(signal.SIGINT)  # the user's Ctrl-C, during the second cell
    proc.communicate(timeout=120)
    matrix_dirs = [p for p in (tmp_path / "results").iterdir() if p.is_dir()]
    assert len(matrix_dirs) == 1
    matrix_id = matrix_dirs[0].name
    first = _complete_cells(tmp_path / "results")[0].parent.name

    again = subprocess.run([*cmd, "--resume", matrix_id], capture_output=True, text=True, timeout=240, check=False,
                           cwd=tmp_path, env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "complete in an earlier attempt, skipped" in again.stdout
    assert "results at each cell's knee" in again.stdout

    listed = subprocess.run([sys.executable, "-m", "raybench", "runs", str(matrix_dirs[0]), "--json"],
                            capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    runs = json.loads(listed.stdout)
    complete = {r["job"] for r in runs if r["status"] == "complete"}
    assert complete == {"mx-llama-3.1-8b-fp8-sim-short", "mx-llama-3.1-70b-fp8-sim-short"}
    first_job = json.loads((matrix_dirs[0] / first / "run.json").read_text())["job"]
    assert [r["job"] for r in runs].count(first_job) == 1, "a completed cell was run again"
