"""`raybench submit`: a job spec and this raybench sent to a cluster through the Ray Jobs API, its logs streamed.

What travels with the submission (nothing has to be installed or copied on the cluster beforehand):
- raybench itself, as the runtime env's `py_modules` entry: the package folder this process imports (a project
  checkout or an installed copy, pure Python), zipped and uploaded through the dashboard. It needs no network
  on the cluster (no PyPI, no git), and the cluster runs exactly the version that checked the spec here.
  raybench's dependencies (pydantic, pyarrow, aiohttp, numpy, rich, ...) must be on the cluster's image; Ray's
  images carry most of them, `--pip` adds what is missing where the cluster can reach an index.
- the job spec, verbatim, as `job.yaml` in the runtime env's `working_dir` (the driver's working folder);
  `--set` overrides and `--output` go on the entrypoint's command line, as with `raybench run`.
"""

from __future__ import annotations

import asyncio
import shlex
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import raybench
from raybench.errors import RaybenchError
from raybench.version import __version__

__all__ = ["Submission", "build_submission", "follow", "results_location", "staging_dir", "submit"]

JOB_FILE = "job.yaml"
_DONE = {"SUCCEEDED", "FAILED", "STOPPED"}


@dataclass(frozen=True)
class Submission:
    """What `JobSubmissionClient.submit_job` gets: the entrypoint, the runtime env, and metadata."""

    entrypoint: str
    runtime_env: dict[str, Any]
    metadata: dict[str, str] = field(default_factory=dict)


def build_submission(
    job_text: str, name: str, staging: Path, overrides: list[str], output: str | None, pip: list[str]
) -> Submission:
    """The submission of a job whose spec is `job_text`; `staging` becomes the job's working folder."""
    (staging / JOB_FILE).write_text(job_text, encoding="utf-8")
    argv = ["python", "-m", "raybench", "run", JOB_FILE]
    for override in overrides:
        argv += ["--set", override]
    if output:
        argv += ["--output", output]
    runtime_env: dict[str, Any] = {
        "working_dir": str(staging),
        "py_modules": [str(Path(raybench.__file__).resolve().parent)],
        "excludes": ["__pycache__", "*.pyc"],
    }
    if pip:
        runtime_env["pip"] = list(pip)
    metadata = {"raybench_job": name, "raybench_version": __version__}
    return Submission(shlex.join(argv), runtime_env, metadata)


def submit(address: str, submission: Submission) -> str:
    """Submit through the dashboard at `address`; returns the submission id."""
    from ray.job_submission import JobSubmissionClient  # imports Ray: only when a job is submitted

    try:
        client = JobSubmissionClient(address)
        return str(
            client.submit_job(
                entrypoint=submission.entrypoint, runtime_env=submission.runtime_env, metadata=submission.metadata
            )
        )
    except Exception as exc:  # Ray raises RuntimeError / ConnectionError / requests' errors for the same cause
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise RaybenchError(f"the Ray cluster at {address} did not take the job: {first}") from None


def follow(address: str, job_id: str, write: Any, poll_s: float = 1.0) -> tuple[str, str]:
    """Stream the job's logs to `write` until it ends; returns (final status, the whole log)."""
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(address)
    chunks: list[str] = []

    async def tail() -> None:
        async for lines in client.tail_job_logs(job_id):
            chunks.append(lines)
            write(lines)

    asyncio.run(tail())
    status = str(client.get_job_status(job_id))
    while status.rsplit(".", 1)[-1] not in _DONE:  # the log stream can close a moment before the status turns
        time.sleep(poll_s)
        status = str(client.get_job_status(job_id))
    return status.rsplit(".", 1)[-1], "".join(chunks)


def results_location(log: str) -> str | None:
    """The run folder the job printed (`results: URI`), if it got that far."""
    found = [line.split("results:", 1)[1].strip() for line in log.splitlines() if line.startswith("results:")]
    return found[-1] if found else None


def staging_dir() -> Path:
    """A fresh local folder for the job's working dir (uploaded by Ray at submission)."""
    return Path(tempfile.mkdtemp(prefix="raybench-submit-"))
