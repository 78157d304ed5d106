"""Text renderings of a report: rich console tables, Markdown, CSV and JSON.

Numbers keep thousands separators and a fixed number of decimals in the human formats
(table, Markdown); CSV and JSON carry the raw values so that other tools can compute with them.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any, Literal

from rich.console import Console
from rich.table import Table

from raybench.report.dynamo import dynamo_sections
from raybench.report.tables import BEST_COLUMNS, PARETO_COLUMNS, SATURATION_COLUMNS, Column, Report

__all__ = ["FORMATS", "cell", "render_csv", "render_json", "render_markdown", "render_table", "slo_line"]

FORMATS = ("table", "json", "csv", "markdown")


def cell(value: Any, column: Column) -> str:
    """A value as shown to people: None as '-', booleans yes/no, numbers with separators."""
    if column.key == "knee":
        return "◀ knee" if value is True else ""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if column.digits is None or not isinstance(value, int | float):
        return str(value)
    return f"{value:,.{column.digits}f}"


def slo_line(report: Report) -> str:
    """'SLO: TTFT P99 <= 500 ms, ITL P50 <= 30 ms' of the first engine (warnings say if they differ)."""
    slo = report.results[0].summary.get("slo") or {}
    return f"SLO: TTFT P99 ≤ {slo.get('ttft_p99_ms', '?'):g} ms, ITL P50 ≤ {slo.get('itl_p50_ms', '?'):g} ms"


def _sections(report: Report) -> list[tuple[str, Sequence[Column], list[dict[str, Any]]]]:
    sections: list[tuple[str, Sequence[Column], list[dict[str, Any]]]] = [
        (f"Pareto table — each engine at its knee ({slo_line(report)})", PARETO_COLUMNS, report.pareto),
        ("Best engine per criterion", BEST_COLUMNS, report.best),
    ]
    for label, rows in report.saturation.items():
        sections.append((f"Saturation — {label}", SATURATION_COLUMNS, rows))
    sections.extend(dynamo_sections(report))  # only when the report holds Dynamo deployments
    return sections


def render_table(report: Report, console: Console) -> None:
    """The tables as rich console tables, then the warnings."""
    for title, all_columns, rows in _sections(report):
        columns = [c for c in all_columns if c.console]
        table = Table(title=title, title_justify="left", title_style="bold")
        for col in columns:
            wrap = col.key in ("justification", "flags", "config", "motor")
            justify: Literal["left", "right"] = "left" if col.digits is None else "right"
            table.add_column(col.header, justify=justify, no_wrap=not wrap, min_width=14 if wrap else None)
        for row in rows:
            style = "bold" if row.get("knee") is True else None
            table.add_row(*(cell(row.get(c.key), c) for c in columns), style=style)
        console.print(table, markup=False, highlight=False)
    for warning in report.warnings:
        console.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)


def _md_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def render_markdown(report: Report) -> str:
    """The tables as GitHub Markdown (pipes and angle brackets escaped), then the warnings."""
    out: list[str] = []
    for title, columns, rows in _sections(report):
        out += [f"### {_md_escape(title)}", ""]
        out.append("| " + " | ".join(c.header for c in columns) + " |")
        out.append("|" + "|".join("---" if c.digits is None else "---:" for c in columns) + "|")
        out += ["| " + " | ".join(_md_escape(cell(r.get(c.key), c)) for c in columns) + " |" for r in rows]
        out.append("")
    if report.warnings:
        out += ["### Warnings", "", *[f"- {_md_escape(w)}" for w in report.warnings], ""]
    return "\n".join(out)


def render_csv(report: Report) -> str:
    """One CSV table per section, each headed by a '# name' line and separated by a blank line."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    pareto_keys = ["run_id", *(c.key for c in PARETO_COLUMNS)]
    buf.write("# pareto\n")
    writer.writerow(pareto_keys)
    writer.writerows([[_raw(r.get(k)) for k in pareto_keys] for r in report.pareto])
    buf.write("\n# best\n")
    writer.writerow(["criterion", "engine", "value", "justification"])
    writer.writerows([[_raw(r.get(k)) for k in ("criterion", "engine", "value", "justification")] for r in report.best])
    buf.write("\n# saturation\n")
    sat_keys = [c.key for c in SATURATION_COLUMNS]
    writer.writerow(["engine", *sat_keys])
    for label, rows in report.saturation.items():
        writer.writerows([[label, *(_raw(r.get(k)) for k in sat_keys)] for r in rows])
    return buf.getvalue()


def _raw(value: Any) -> Any:
    return "" if value is None else value


def render_json(report: Report) -> str:
    """The report as one JSON document: pareto, best, saturation (by engine), warnings."""
    doc = {
        "pareto": report.pareto,
        "best": report.best,
        "saturation": report.saturation,
        "warnings": report.warnings,
        "runs": sorted({r.run_uri for r in report.results}),
    }
    return json.dumps(doc, indent=1)
