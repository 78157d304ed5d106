"""The HTML report: self-contained, every string escaped, tables and plots present."""

from __future__ import annotations

import re

import pytest
from report_samples import ARTICLE_VLLM

from raybench.report.html import render_html
from raybench.report.plots import PLOTS, svg_plots
from raybench.report.tables import build_report

HOSTILE = "<script>alert(1)</script>"


@pytest.fixture
def hostile_report(summary, loaded):
    bad = summary(HOSTILE, ARTICLE_VLLM, motor=HOSTILE, config=f'{HOSTILE}" onmouseover="x')
    bad["steps"][2]["validity"]["client_saturated"] = True
    bad["steps"][2]["notes"] = [f"note {HOSTILE}"]
    bad["definitions"][HOSTILE] = HOSTILE
    bad["provenance"]["engine_args"] = {HOSTILE: HOSTILE}
    return build_report(loaded(summary("vllm", ARTICLE_VLLM), bad, run_id=f"run-{HOSTILE}"))


def test_every_string_is_escaped(hostile_report) -> None:
    page = render_html(hostile_report, svg_plots(hostile_report))
    assert "<script" not in page.lower()
    assert 'onmouseover="' not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # Engine ids reach the SVG legends escaped too.
    svgs = re.findall(r"<svg.*?</svg>", page, flags=re.S)
    assert len(svgs) == len(PLOTS)
    assert any("&lt;script&gt;" in svg for svg in svgs)


def test_page_is_self_contained(hostile_report) -> None:
    page = render_html(hostile_report, svg_plots(hostile_report))
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # Nothing is fetched: the only references are fragment ids inside the page (SVG markers, clips).
    assert not re.search(r"""\b(src|href)\s*=\s*["'](?!#)""", page)
    assert not re.search(r"url\((?!#)", page)
    assert "@import" not in page and "<link" not in page and "<img" not in page


def test_page_holds_tables_plots_warnings_and_provenance(summary, loaded) -> None:
    report = build_report(loaded(summary("vllm", ARTICLE_VLLM)))
    page = render_html(report, svg_plots(report), {name: caption for name, (caption, _) in PLOTS.items()})
    for table_id in ("pareto-table", "best-table", "saturation-0"):
        assert f'<table id="{table_id}">' in page
    assert page.count("<svg") == len(PLOTS)
    assert "knee at concurrency 32" in page and "12,200 tok/s" in page
    assert '<tr class="knee">' in page
    assert "No validity warnings" in page
    assert "Definitions and provenance" in page and "token-weighted inter-token gaps" in page
