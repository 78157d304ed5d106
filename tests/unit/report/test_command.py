"""`raybench report` through the CLI entry point (no Ray: summaries on disk)."""

from __future__ import annotations

import json
from pathlib import Path

from report_samples import ARTICLE_VLLM, make_summary, write_run

from raybench.cli import main


def test_report_prints_tables_and_writes_html_and_plots(tmp_path: Path, capsys) -> None:
    run = write_run(tmp_path, "run-a", [make_summary("vllm", ARTICLE_VLLM)])
    html, png = tmp_path / "out" / "report.html", tmp_path / "png"
    assert main(["report", str(run), "--html", str(html), "--png", str(png)]) == 0
    out = capsys.readouterr()
    assert "Pareto table" in out.out and "Saturation — vllm" in out.out and "12,200" in out.out
    assert html.is_file() and html.read_text().count("<svg") == 4
    assert sorted(p.name for p in png.iterdir()) == sorted(
        f"{n}.{ext}" for n in ("goodput", "itl", "pareto", "per_user_vs_per_gpu") for ext in ("png", "svg")
    )
    assert f"html report: {html}" in out.err


def test_report_formats(tmp_path: Path, capsys) -> None:
    run = write_run(tmp_path, "run-a", [make_summary("vllm", ARTICLE_VLLM)])
    assert main(["report", str(run), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["pareto"][0]["goodput_tok_s"] == 12200
    assert main(["report", str(run), "--format", "markdown"]) == 0
    assert "| Engine |" in capsys.readouterr().out
    assert main(["report", str(run), "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("# pareto\n")


def test_report_of_nothing_fails_cleanly(tmp_path: Path, capsys) -> None:
    assert main(["report", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "no raybench run under" in err and "Traceback" not in err
