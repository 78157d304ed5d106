"""One synchronized sweep step: shard the load, start every generator at one instant, collect reports."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import ray
from rich.progress import Progress

from raybench.loadgen.actor import GeneratorStep
from raybench.loadgen.closed_loop import Shard
from raybench.sweep.fleet import Fleet, split_evenly

__all__ = ["StepOutcome", "StepRequest", "run_step"]

_START_LEAD_NS = 300_000_000  # time for the start message to reach every generator before the instant
_PROMPTS_PER_STEP = 10_000_000  # prompt numbers of step k start at (k + 1) * this: steps never share prompts


@dataclass(frozen=True)
class StepRequest:
    """The load of one step, before it is split across generators."""

    run_id: str
    engine_id: str
    step_index: int
    phase: str
    concurrency: int
    duration_s: float | None
    requests: int | None
    timeout_s: float


@dataclass(frozen=True)
class StepOutcome:
    """Every generator's report, the common start instant, and the measurement window (driver clock)."""

    reports: list[dict[str, Any]]
    start_wall_ns: int
    window_start_ns: int
    window_end_ns: int | None


def _shards(req: StepRequest, generators: int) -> list[Shard]:
    shares = split_evenly(req.concurrency, generators)
    budgets = split_evenly(req.requests, generators) if req.requests is not None else [None] * generators
    prefix = f"{req.engine_id}:{req.step_index}:"
    return [
        Shard(
            concurrency=min(c, b) if b is not None else c,
            duration_s=req.duration_s,
            max_requests=b,
            prompt_base=(req.step_index + 1) * _PROMPTS_PER_STEP,
            prompt_stride=generators,
            prompt_offset=g,
            timeout_s=req.timeout_s,
            request_id_prefix=prefix,
        )
        for g, (c, b) in enumerate(zip(shares, budgets))
    ]


def run_step(fleet: Fleet, req: StepRequest, progress: Progress | None, label: str) -> StepOutcome:
    """Run `req` on the whole fleet, showing a progress bar; returns when every generator is done."""
    shards = _shards(req, len(fleet.ids))
    steps = [
        GeneratorStep(req.run_id, req.engine_id, req.step_index, req.phase, req.concurrency, shard, off.offset_ns)
        for shard, off in zip(shards, fleet.offsets)
    ]
    start_wall_ns = time.time_ns() + _START_LEAD_NS
    pending = fleet.submit(steps, start_wall_ns)
    total = float(req.requests) if req.requests is not None else float(req.duration_s or 0)
    task = progress.add_task(label, total=total, requests=0) if progress is not None else None
    while True:
        ready, _ = ray.wait(pending, num_returns=len(pending), timeout=0.5)
        if progress is not None and task is not None:
            done = fleet.progress()
            if req.requests is not None:
                progress.update(task, completed=done, requests=done)
            else:
                elapsed = max(time.time_ns() - start_wall_ns, 0) / 1e9
                progress.update(task, completed=min(elapsed, total), requests=done)
        if len(ready) == len(pending):
            break
    reports: list[dict[str, Any]] = ray.get(pending)
    if progress is not None and task is not None:
        progress.update(task, completed=total, requests=sum(r["records"] for r in reports))
    return StepOutcome(reports, start_wall_ns, *_window(reports, start_wall_ns))


def _window(reports: list[dict[str, Any]], start_wall_ns: int) -> tuple[int, int | None]:
    """Opens when every active generator reached its target load; closes when the first stopped issuing."""
    active = [r for r in reports if r["concurrency"] > 0]
    reached = [r["reached_target_ns"] for r in active]
    stopped = [r["stopped_issuing_ns"] for r in active if r["stopped_issuing_ns"] is not None]
    start = max(reached) if reached and all(x is not None for x in reached) else start_wall_ns
    end = min(stopped) if stopped else None
    return start, end
