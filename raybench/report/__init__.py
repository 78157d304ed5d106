"""Reports people read: console tables now; Pareto frontier, plots and HTML as they are added."""

from raybench.report.console import format_number, knee_line, print_engine_summary, saturation_table

__all__ = ["format_number", "knee_line", "print_engine_summary", "saturation_table"]
