"""Ctrl-C on `raybench run` (SIGINT to its process group mid-step, as a terminal sends it): it stops cleanly,
keeps what it wrote, marks the run interrupted, says how to resume, exits 130 and leaves no process behind.
Also: bad input exits 2 with a message and starts nothing."""

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

import raybench

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

JOB = {
    "name": "interruptible", "model": {"name": "sim-model"},
    "engines": [{"kind": "simulated", "id": "sim", "max_num_seqs": 32}],
    "workload": {"isl": {"mean": 64, "std": 0}, "osl": {"mean": 24, "std": 0}, "seed": 5},
    "load": {"steps": [2, 4, 6], "requests": 40},
    "slo": {"ttft_p99_ms": 2000, "itl_p50_ms": 100}, "fleet": {"generators": 1, "num_cpus_per_generator": 0.5},
}  # fmt: skip


def _env() -> dict[str, str]:
    """This checkout importable from any folder; an embedded Ray of its own (no RAY_ADDRESS)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(raybench.__file__).parents[1]), env.get("PYTHONPATH", "")])
    return env


def _raybench(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "raybench", *args], cwd=cwd, env=_env(), start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip


def _group_gone(pgid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path: Path) -> None:
    out = tmp_path / "results"
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({**JOB, "output": {"uri": str(out)}}))
    proc = _raybench(["run", str(job)], tmp_path)
    try:
        deadline = time.monotonic() + 240
        while not list(out.glob("*/engines/sim/steps/step=0.json")):
            assert proc.poll() is None, f"the run ended early: {proc.stdout.read() if proc.stdout else ''}"
            assert time.monotonic() < deadline, "step 0 never completed"
            time.sleep(0.1)
        time.sleep(0.3)  # step 1 is in flight now
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
        output = proc.communicate(timeout=120)[0]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    assert proc.returncode == 130, output
    assert f"raybench run {job} --resume {run_dir.name}" in output, output
    assert "sim steps 0" in output and "Traceback" not in output, output
    assert not (run_dir / "_COMPLETE").exists()
    manifest = json.loads((run_dir / "run.json").read_text())
    assert len(manifest["interrupted_at"]) == 1
    assert (run_dir / "engines/sim/steps/step=0.json").is_file()
    assert list((run_dir / "engines/sim/records/step=0").rglob("*.parquet")), "step 0's records were kept"
    assert _group_gone(proc.pid, 30), "the engine, the generators or the embedded Ray outlived the driver"
    listing = _raybench(["runs", str(out), "--status", "incomplete"], tmp_path).communicate(timeout=60)[0]
    assert run_dir.name in listing


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["run", "no-such-job.yaml"], "no-such-job.yaml"),
        (["run", "JOB", "--set", "load.stepz=[1]"], "stepz"),
        (["validate", "JOB", "--set", "load.requests=-1"], "requests"),
        (["bogus-command"], "invalid choice"),
        (["run", "JOB", "--resume", "no-such-run"], "no run 'no-such-run'"),
    ],
)
def test_bad_input_exits_2_with_a_message(tmp_path: Path, args: list[str], text: str) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({**JOB, "output": {"uri": str(tmp_path / "results")}}))
    argv = [str(job) if a == "JOB" else a for a in args]
    done = subprocess.run([sys.executable, "-m", "raybench", *argv], cwd=tmp_path, env=_env(), check=False,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert text in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not list(tmp_path.glob("results/*")), "bad input started a run"
