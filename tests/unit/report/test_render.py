"""Text renderings: console table, Markdown, CSV, JSON."""

from __future__ import annotations

import csv
import io
import json

from report_samples import ARTICLE_VLLM
from rich.console import Console

from raybench.report.render import render_csv, render_json, render_markdown, render_table
from raybench.report.tables import build_report


def _report(summary, loaded):
    return build_report(loaded(summary("vllm", ARTICLE_VLLM), summary("a|b<i>", ARTICLE_VLLM[:2])))


def test_console_table_shows_the_article_columns(summary, loaded) -> None:
    console = Console(width=200, record=True, file=io.StringIO())
    render_table(_report(summary, loaded), console)
    text = console.export_text()
    assert "Pareto table — each engine at its knee (SLO: TTFT P99 ≤ 500 ms, ITL P50 ≤ 30 ms)" in text
    for header in ("Throughput tok/s", "TTFT P50 ms", "TTFT P99 ms", "ITL P50 ms", "Goodput % @SLO"):
        assert header in text
    assert "12,500" in text and "12,200" in text and "97.6" in text
    assert "Saturation — vllm" in text and "◀ knee" in text
    assert "Best engine per criterion" in text


def test_markdown_escapes_pipes_and_tags(summary, loaded) -> None:
    md = render_markdown(_report(summary, loaded))
    assert "| vllm | vllm 0.9 | FP8, chunked prefill | 32 | 12,500 | 210.0 | 420.0 | 18.00 | 12,200 | 97.6 |" in md
    assert "a\\|b&lt;i&gt;" in md and "<i>" not in md


def test_csv_keeps_raw_numbers_per_section(summary, loaded) -> None:
    text = render_csv(_report(summary, loaded))
    sections = {block.split("\n", 1)[0]: block.split("\n", 1)[1] for block in text.strip().split("\n\n")}
    assert set(sections) == {"# pareto", "# best", "# saturation"}
    pareto = list(csv.DictReader(io.StringIO(sections["# pareto"])))
    assert pareto[0]["goodput_tok_s"] == "12200" and pareto[0]["knee_concurrency"] == "32"
    saturation = list(csv.DictReader(io.StringIO(sections["# saturation"])))
    assert [r["concurrency"] for r in saturation if r["engine"] == "vllm"] == ["8", "16", "32", "48", "64"]


def test_json_document(summary, loaded) -> None:
    doc = json.loads(render_json(_report(summary, loaded)))
    assert set(doc) == {"pareto", "best", "saturation", "warnings", "runs"}
    assert doc["pareto"][0]["throughput_tok_s"] == 12500
    assert doc["best"][0]["engine"] == "vllm"
    assert len(doc["saturation"]["vllm"]) == 5
