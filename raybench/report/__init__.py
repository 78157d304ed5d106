"""Reports people read: console tables of a run, and `raybench report` (tables, Pareto frontier, plots, HTML)."""

from raybench.report.console import format_number, knee_line, print_engine_summary, saturation_table

__all__ = ["format_number", "knee_line", "print_engine_summary", "saturation_table"]
