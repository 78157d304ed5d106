"""Console output of a run: the saturation table per engine and the line naming knee and capacity."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["format_number", "knee_line", "print_engine_summary", "saturation_table"]


def format_number(value: Any, digits: int = 1) -> str:
    """Numbers with thousands separators; None as an en dash."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{float(value):,.{digits}f}"


def saturation_table(summary: dict[str, Any]) -> Table:
    """One row per step: the article's saturation table plus goodput %, SLO held and validity."""
    slo = summary["slo"]
    title = (
        f"{summary['engine_id']} — {summary['motor']} {summary['motor_version']} · {summary['model']} "
        f"{summary['precision']} · SLO TTFT P99 ≤ {slo['ttft_p99_ms']:g} ms, ITL P50 ≤ {slo['itl_p50_ms']:g} ms"
    )
    table = Table(title=title, title_justify="left")
    for name in (
        "Concurrency",
        "TTFT P50 ms",
        "TTFT P99 ms",
        "ITL P50 ms",
        "Throughput tok/s",
        "Goodput tok/s",
        "Goodput %",
        "Requests",
        "SLO held",
        "Flags",
    ):
        table.add_column(name, justify="left" if name in ("SLO held", "Flags") else "right", no_wrap=name != "Flags")
    knee = summary.get("results_at_knee") or {}
    for step in summary["steps"]:
        flags = [k for k, v in step.get("validity", {}).items() if v is True]
        held = "[green]yes[/]" if step["slo_held"] else "[red]no[/]"
        style = "bold" if knee and step["concurrency"] == knee.get("concurrency") else None
        table.add_row(
            str(step["concurrency"]),
            format_number(step["ttft_p50_ms"]),
            format_number(step["ttft_p99_ms"]),
            format_number(step["itl_p50_ms"], 2),
            format_number(step["throughput_tok_s"]),
            format_number(step["goodput_tok_s"]),
            format_number(step.get("goodput_pct")),
            format_number(step.get("requests")),
            held,
            ", ".join(flags),
            style=style,
        )
    return table


def knee_line(summary: dict[str, Any]) -> str:
    """'Knee: concurrency 16 — defensible capacity 1,234.5 tok/s of goodput' (or why there is none)."""
    knee = summary.get("results_at_knee")
    if not knee:
        return (
            f"{summary['engine_id']}: no step held the SLO — no knee, no defensible capacity; "
            "lower the first concurrency steps or relax the SLO"
        )
    return (
        f"{summary['engine_id']}: knee at concurrency {knee['concurrency']} — defensible capacity "
        f"{format_number(knee['goodput_tok_s'])} tok/s of goodput "
        f"(throughput {format_number(knee['throughput_tok_s'])} tok/s, "
        f"TTFT P99 {format_number(knee['ttft_p99_ms'])} ms, "
        f"ITL P50 {format_number(knee['itl_p50_ms'], 2)} ms)"
    )


def print_engine_summary(summary: dict[str, Any], console: Console) -> None:
    console.print(saturation_table(summary))
    console.print(f"[bold]{knee_line(summary)}[/]")
    notes = [f"concurrency {s['concurrency']}: {n}" for s in summary["steps"] for n in s.get("notes", [])]
    for note in notes[:10]:
        console.print(f"[yellow]note[/] {note}")
