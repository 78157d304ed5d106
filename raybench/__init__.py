"""raybench: a Ray-based benchmark orchestrator for LLM serving engines (public API)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from raybench.config import JobSpec, load_job, parse_job
from raybench.errors import ConfigError, EngineError, RaybenchError, RunAborted, StorageError
from raybench.version import __version__

if TYPE_CHECKING:
    from raybench.sweep.driver import RunResult

__all__ = [
    "ConfigError",
    "EngineError",
    "JobSpec",
    "RaybenchError",
    "RunAborted",
    "StorageError",
    "__version__",
    "load_job",
    "parse_job",
    "run",
]


def run(spec: JobSpec | str | Path) -> RunResult:
    """Run a job (a JobSpec or a YAML path) and return where its results are and what they say."""
    from raybench.sweep.driver import run_job  # imports Ray only when a run is asked for

    job = spec if isinstance(spec, JobSpec) else load_job(spec)
    return run_job(job)
