"""`raybench matrix`: expand, show the cells, run them, and print the cross-cell comparison."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from raybench.sweep.matrix import MatrixResult, expand, load_matrix, run_matrix

__all__ = ["cross_cell_table", "matrix_command"]


def matrix_command(path: str, resume: str | None, dry_run: bool, console: Console) -> int:
    spec, base = load_matrix(path)
    cells = expand(spec, base, source=path)
    console.print(f"matrix [bold]{spec.name}[/]: {len(cells)} cells")
    for cell in cells:
        console.print(f"  {cell.name}")
    if dry_run:
        return 0
    result = run_matrix(spec, cells, console, resume=resume)
    console.print(cross_cell_table(result))
    console.print(f"matrix id {result.matrix_id} -> {result.uri}")
    console.print(f"full comparison (Pareto, saturation, best per criterion, plots): raybench report {result.uri}")
    if result.failed:
        console.print(f"[red]{len(result.failed)} cell(s) failed[/]; rerun with --resume {result.matrix_id}")
        return 1
    return 0


def cross_cell_table(result: MatrixResult) -> Table:
    """One row per cell run now: the knee and what it delivers there."""
    table = Table(title=f"matrix {result.matrix_id}: results at each cell's knee", title_justify="left")
    for name in ("cell", "motor", "model", "precision", "knee conc.", "goodput tok/s", "throughput tok/s",
                 "TTFT P99 ms", "ITL P50 ms"):  # fmt: skip
        table.add_column(name, justify="left" if name in ("cell", "motor", "model", "precision") else "right")
    for cell, summary in sorted(result.summaries.items(), key=lambda kv: -_goodput(kv[1])):
        knee: dict[str, Any] = summary.get("results_at_knee") or {}
        table.add_row(
            cell, summary["motor"], summary["model"], summary["precision"], str(knee.get("concurrency", "-")),
            _fmt(knee.get("goodput_tok_s")), _fmt(knee.get("throughput_tok_s")), _fmt(knee.get("ttft_p99_ms")),
            _fmt(knee.get("itl_p50_ms")),
        )  # fmt: skip
    return table


def _goodput(summary: dict[str, Any]) -> float:
    knee = summary.get("results_at_knee") or {}
    return float(knee.get("goodput_tok_s") or 0.0)


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{float(value):,.1f}"
