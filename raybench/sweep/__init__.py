"""The driver side of a run: fleet, synchronized steps, knee logic, summaries."""

from raybench.sweep.driver import RunResult, new_run_id, run_job

__all__ = ["RunResult", "new_run_id", "run_job"]
