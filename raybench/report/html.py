"""The self-contained HTML report: verdict, tables, inline SVG plots, validity warnings, provenance.

One file, no external fetch (inline CSS and SVG; a Content-Security-Policy forbids loading
anything, scripts included). Every string that comes from a run (engine ids, configs, notes,
provenance) goes through ``html.escape``; the SVG plots come from matplotlib, which escapes
the text it writes.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from raybench.report.render import cell, slo_line
from raybench.report.tables import BEST_COLUMNS, PARETO_COLUMNS, SATURATION_COLUMNS, Column, Report
from raybench.version import __version__

__all__ = ["render_html"]

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;color:#1d2430;
 background:#fff;max-width:1180px;margin:0 auto;padding:24px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:28px 0 8px;border-bottom:2px solid #e3e7ee;
 padding-bottom:4px}h3{font-size:16px;margin:18px 0 6px}
.meta{color:#4a5566;margin:0 0 12px}
table{border-collapse:collapse;margin:6px 0 14px;font-variant-numeric:tabular-nums;width:100%}
th,td{border:1px solid #d5dbe5;padding:5px 8px;vertical-align:top}
th{background:#eef2f8;text-align:left;font-weight:600}td.num{text-align:right;white-space:nowrap}
tr.knee td{background:#fff6d6;font-weight:600}tr:nth-child(even) td{background-color:#fafbfd}
tr.knee:nth-child(even) td{background:#fff6d6}
.yes{color:#17803d;font-weight:600}.no{color:#b42318;font-weight:600}
.warn{background:#fff4e5;border-left:5px solid #f79009;padding:8px 14px;margin:10px 0}
.warn li{margin:3px 0}.ok{background:#ecfdf3;border-left:5px solid #17803d;padding:8px 14px}
.verdict{font-size:16px}.verdict li{margin:4px 0}
.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:16px}
figure{margin:0}figure svg{width:100%;height:auto;border:1px solid #e3e7ee}
figcaption{color:#4a5566;font-size:13px}
dt{font-weight:600}dd{margin:0 0 6px 16px;color:#333}
pre{background:#f5f7fa;padding:10px;overflow:auto;font-size:12px;max-height:420px}
"""

_KNEE_FIGURES = (("goodput_tok_s", 0), ("ttft_p99_ms", 1), ("itl_p50_ms", 2))

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _td(value: Any, column: Column) -> str:
    text = _e(cell(value, column))
    if isinstance(value, bool):
        return f'<td class="{"yes" if value else "no"}">{text}</td>'
    return f'<td class="num">{text}</td>' if column.digits is not None else f"<td>{text}</td>"


def _table(columns: Sequence[Column], rows: list[dict[str, Any]], table_id: str) -> str:
    head = "".join(f"<th>{_e(c.header)}</th>" for c in columns)
    body = []
    for row in rows:
        cls = ' class="knee"' if row.get("knee") is True else ""
        body.append(f"<tr{cls}>" + "".join(_td(row.get(c.key), c) for c in columns) + "</tr>")
    return f'<table id="{_e(table_id)}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _header(report: Report) -> str:
    first = report.results[0].summary
    facts = " · ".join(_e(f"{key}: {first.get(key, '?')}") for key in ("model", "precision", "hardware", "dataset"))
    runs = ", ".join(sorted({_e(r.run_id) for r in report.results}))
    return (
        f'<header><h1>raybench report</h1><p class="meta">{facts}<br>{_e(slo_line(report))}'
        f" · runs: {runs} · raybench {_e(__version__)}</p></header>"
    )


def _verdict(report: Report) -> str:
    lines = []
    for label, result in zip(report.labels, report.results):
        knee = result.summary.get("results_at_knee")
        if knee:
            good, ttft, itl = (cell(knee.get(k), Column(k, k, d)) for k, d in _KNEE_FIGURES)
            lines.append(
                f"<li><b>{_e(label)}</b>: knee at concurrency {_e(knee['concurrency'])} — defensible capacity "
                f"<b>{_e(good)} tok/s</b> of goodput (TTFT P99 {_e(ttft)} ms, ITL P50 {_e(itl)} ms)</li>"
            )
        else:
            lines.append(f"<li><b>{_e(label)}</b>: no step held the SLO — no knee, no defensible capacity</li>")
    return (
        '<section id="verdict"><h2>Verdict</h2><ul class="verdict">'
        + "".join(lines)
        + "</ul>"
        + _table(BEST_COLUMNS, report.best, "best-table")
        + "</section>"
    )


def _warnings(report: Report) -> str:
    if not report.warnings:
        return '<section id="validity"><p class="ok">No validity warnings: every step is trustworthy.</p></section>'
    items = "".join(f"<li>{_e(w)}</li>" for w in report.warnings)
    return (
        '<section id="validity" class="warn"><h2>Validity warnings</h2>'
        "<p>Read the numbers below with these in mind.</p><ul>" + items + "</ul></section>"
    )


def _plots(svgs: dict[str, str], captions: dict[str, str]) -> str:
    figures = "".join(
        f'<figure id="plot-{_e(name)}">{svg}<figcaption>{_e(captions.get(name, name))}</figcaption></figure>'
        for name, svg in svgs.items()
    )
    return f'<section id="plots"><h2>Plots</h2><div class="plots">{figures}</div></section>'


def _saturation(report: Report) -> str:
    parts = ['<section id="saturation"><h2>Saturation per engine (concurrency sweep; knee row highlighted)</h2>']
    for i, (label, rows) in enumerate(report.saturation.items()):
        parts.append(f"<h3>{_e(label)}</h3>" + _table(SATURATION_COLUMNS, rows, f"saturation-{i}"))
    return "".join(parts) + "</section>"


def _provenance(report: Report) -> str:
    parts = ['<section id="provenance"><h2>Definitions and provenance</h2>']
    definitions = report.results[0].summary.get("definitions") or {}
    parts.append("<dl>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in definitions.items()) + "</dl>")
    for label, result in zip(report.labels, report.results):
        s = result.summary
        facts = {k: s.get(k) for k in ("harness", "harness_version", "motor", "motor_version", "config", "slo")}
        doc = json.dumps({**facts, "provenance": s.get("provenance")}, indent=1, default=str)
        parts.append(f"<details><summary>{_e(label)} — {_e(result.run_uri)}</summary><pre>{_e(doc)}</pre></details>")
    return "".join(parts) + "</section>"


def render_html(report: Report, svgs: dict[str, str], captions: dict[str, str] | None = None) -> str:
    """The whole report as one HTML document (``svgs``: plot name -> inline SVG text)."""
    title = "raybench report — " + ", ".join(report.labels)
    body = [
        _header(report),
        _warnings(report),
        _verdict(report),
        f'<section id="pareto"><h2>Pareto table — each engine at its knee</h2>'
        f"{_table(PARETO_COLUMNS, report.pareto, 'pareto-table')}</section>",
        _plots(svgs, captions or {}),
        _saturation(report),
        _provenance(report),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>" + "".join(body) + "</body></html>\n"
    )
