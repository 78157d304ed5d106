"""`raybench report`: load runs, print the tables in the asked format, write PNG/SVG plots and HTML."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from raybench.errors import StorageError
from raybench.report.render import render_csv, render_json, render_markdown, render_table
from raybench.report.runs import load_runs
from raybench.report.tables import Report, build_report

__all__ = ["report_command", "write_html"]


def write_html(report: Report, path: str | Path) -> Path:
    """Render the self-contained HTML report (with its SVG plots) to ``path``."""
    from raybench.report.html import render_html  # matplotlib only when plots are asked for
    from raybench.report.plots import PLOTS, svg_plots

    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render_html(report, svg_plots(report), {k: v[0] for k, v in PLOTS.items()}), "utf-8")
    except OSError as exc:
        raise StorageError(f"cannot write the HTML report to {target}: {exc}") from None
    return target


def report_command(
    uris: Sequence[str],
    *,
    fmt: str = "table",
    html: str | None = None,
    png: str | None = None,
    recompute: bool = False,
    console: Console,
    notices: Console,
) -> int:
    """Print the report of ``uris`` to ``console`` in ``fmt``; file notices go to ``notices``."""
    report = build_report(load_runs(uris, recompute=recompute))
    if fmt == "table":
        render_table(report, console)
    else:
        text = {"json": render_json, "csv": render_csv, "markdown": render_markdown}[fmt](report)
        console.file.write(text if text.endswith("\n") else text + "\n")
    if png:
        from raybench.report.plots import write_plots

        try:
            files = write_plots(report, png)
        except OSError as exc:
            raise StorageError(f"cannot write plots to {png}: {exc}") from None
        notices.print(f"plots: {len(files)} files in {png}", markup=False, highlight=False)
    if html:
        notices.print(f"html report: {write_html(report, html)}", markup=False, highlight=False)
    return 0
