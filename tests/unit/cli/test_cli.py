"""CLI behaviour without Ray: validate exit codes and messages, run's input errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from raybench.cli import main

BROKEN = {
    "unknown_key.yaml": "name: q\nmodel: {name: m}\nengines: [{kind: simulated}]\nworkload: {isl: {mean: 9}, "
    "osl: {mean: 5}}\nload: {steps: [1], duration_s: 1}\nslo: {ttft_p99_ms: 5, itl_p50_ms: 3}\nbogus: 1\n",
    "bad_yaml.yaml": "name: q\nmodel: {name: m\n  engines: [\n",
    "empty.yaml": "",
}


def test_validate_shipped_quickstart(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[3]
    assert main(["validate", str(root / "jobs" / "quickstart.yaml")]) == 0
    assert "ok" in capsys.readouterr().err


def test_validate_directory_of_broken_specs(tmp_path: Path) -> None:
    for name, text in BROKEN.items():
        (tmp_path / name).write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "raybench", "validate", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out
    assert "bogus: unknown key 'bogus'" in out
    assert "not valid YAML at line 3" in out
    assert "a job spec is a YAML mapping" in out
    assert out.count("error ") == 3


def test_run_bad_spec_exits_2_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "job.yaml"
    bad.write_text(BROKEN["unknown_key.yaml"])
    proc = subprocess.run(
        [sys.executable, "-m", "raybench", "run", str(bad), "--set", "load.duration_s=-1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "load.duration_s" in proc.stderr
