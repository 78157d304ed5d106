"""`raybench workload --preview`: histograms of what a job sends, without Ray or an engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from raybench.cli import main

ROOT = Path(__file__).resolve().parents[3]


def test_preview_quickstart_switched_to_sharegpt(capsys: pytest.CaptureFixture[str]) -> None:
    sample = ROOT / "examples" / "data" / "sharegpt_sample.json"
    code = main(["workload", str(ROOT / "jobs" / "quickstart.yaml"), "--preview", "--count", "200",
                 "--set", f"workload={{kind: sharegpt, path: {sample}}}"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "workload sharegpt" in out and "approximate" in out
    assert "input tokens (ISL)" in out and "output tokens (OSL, requested)" in out
    assert "█" in out


def test_preview_missing_dataset_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["workload", str(ROOT / "jobs" / "sharegpt.yaml"), "--set", f"workload.path={tmp_path}/none.json"])
    assert code == 2
    assert "no dataset file" in capsys.readouterr().err
