"""An engine's sweep: warm-up, steps in order (listed, then past the knee), attempts with re-runs, markers.

Each execution of a step is an attempt with its own id; a generator dying mid-step leaves that attempt
incomplete, the dead generator is replaced and the step re-run (`fleet.step_reruns` times at most).
A completed step is marked (raybench.sweep.resume) with its metrics and the attempt that counts, and
its metrics are computed from that attempt's records only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from raybench.config.job import JobSpec
from raybench.deploy.observe import StepObserver
from raybench.metrics import StepMetrics, Window, compute_step
from raybench.metrics.knee import EXTEND_MIN_GOODPUT_PCT
from raybench.results.schema import RECORD_SCHEMA, select_attempt
from raybench.results.store import ResultStore
from raybench.results.writer import records_prefix
from raybench.sweep.fleet import Fleet, GeneratorLost
from raybench.sweep.interrupt import check_interrupt
from raybench.sweep.resume import next_attempt, write_marker
from raybench.sweep.step import StepOutcome, StepRequest, make_request, run_step, step_label, sweep_requests

__all__ = ["StepFailed", "SweepContext", "knee_of", "run_attempts", "sweep_engine"]


class StepFailed(RuntimeError):
    """Every attempt of a step lost a generator."""


@dataclass
class SweepContext:
    """What one engine's sweep needs and what it found."""

    spec: JobSpec
    engine_id: str
    run_id: str
    store: ResultStore
    fleet: Fleet
    observer: StepObserver
    console: Console
    done: dict[int, dict[str, Any]] = field(default_factory=dict)  # markers of completed steps (earlier, and now)
    steps: list[dict[str, Any]] = field(default_factory=list)  # every step's dict, in order
    failure: dict[str, Any] | None = None


def run_attempts(
    fleet: Fleet, req: StepRequest, reruns: int, first_attempt: int, progress: Progress | None, label: str
) -> tuple[StepOutcome, int, list[dict[str, Any]]]:
    """Run `req` until an attempt completes; returns its outcome, its attempt id, and the lost attempts."""
    lost: list[dict[str, Any]] = []
    attempt = first_attempt
    for _ in range(reruns + 1):
        try:
            return run_step(fleet, req.with_attempt(attempt), progress, label), attempt, lost
        except GeneratorLost as exc:
            lost.append({"attempt": attempt, "generators": exc.generator_ids})
            fleet.revive(exc.generator_ids)
            attempt += 1
            label = f"{label} (re-run, attempt {attempt})"
    raise StepFailed(f"step {req.step_index}: every attempt lost a generator ({lost}); see fleet.step_reruns")


def _progress(console: Console) -> Progress:
    columns = [TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[requests]} req"),
               TimeElapsedColumn()]  # fmt: skip
    return Progress(*columns, console=console, transient=False)


def sweep_engine(ctx: SweepContext) -> list[dict[str, Any]]:
    """Run the steps not done yet; returns every step's dict (done earlier or now), in order."""
    load = ctx.spec.load
    warm, listed = sweep_requests(load, ctx.run_id, ctx.engine_id)
    levels: list[float] = []
    with _progress(ctx.console) as progress:
        for index in range(load.max_steps):
            check_interrupt()
            if index < len(listed):
                req = listed[index]
            elif load.extend_past_knee and _extend(ctx.steps):
                req = make_request(load, ctx.run_id, ctx.engine_id, index, load.next_level(levels))
            else:
                break
            if index in ctx.done:  # completed before the driver stopped: its marker stands for it
                ctx.steps.append(ctx.done[index]["metrics"])
                levels.append(float(ctx.done[index]["level"]))
                continue
            if warm is not None:  # only when a step remains to run on this deployment
                _warm_up(ctx, warm, progress)
                warm = None
            levels.append(req.level)
            if not _measured_step(ctx, req, progress):
                break
    return ctx.steps


def _extend(steps: list[dict[str, Any]]) -> bool:
    """Past the listed steps: go on while the last step's goodput % is at least 50."""
    pct = steps[-1].get("goodput_pct") if steps else None
    return pct is not None and float(pct) >= EXTEND_MIN_GOODPUT_PCT and not steps[-1].get("failed")


def _warm_up(ctx: SweepContext, warm: StepRequest, progress: Progress) -> None:
    what = f"{warm.requests} requests" if warm.requests is not None else f"{warm.duration_s:g} s"
    label = f"{ctx.engine_id} warm-up ({what}, discarded)"
    first = next_attempt(ctx.store, ctx.engine_id, warm.step_index)
    run_attempts(ctx.fleet, warm, ctx.spec.fleet.step_reruns, first, progress, label)


def _measured_step(ctx: SweepContext, req: StepRequest, progress: Progress) -> bool:
    """Run, measure and mark one step; False when the sweep must stop (engine or generators failed)."""
    label = f"{ctx.engine_id} step {req.step_index} {step_label(req)}"
    first = next_attempt(ctx.store, ctx.engine_id, req.step_index)
    ctx.observer.begin(req.step_index)
    try:
        outcome, attempt, lost = run_attempts(ctx.fleet, req, ctx.spec.fleet.step_reruns, first, progress, label)
    except StepFailed as exc:
        ctx.observer.end(req.step_index)
        ctx.failure = {"step_index": req.step_index, "reason": str(exc)}
        return False
    engine_failure = ctx.observer.end(req.step_index)
    metrics = _metrics(ctx, req, outcome, attempt)
    step = ctx.observer.annotate([metrics.to_dict()])[0]
    skew = outcome.start_skew_ns
    step.update(
        attempt=attempt, lost_attempts=lost, start_skew_ms=None if skew is None else skew / 1e6,
        generators=outcome.shares(), level=req.level,
    )  # fmt: skip
    ctx.steps.append(step)
    if engine_failure is not None:
        return False  # the step is kept (marked failed by the observer) but not marked done: resume re-runs it
    marker = {"step_index": req.step_index, "level": req.level, "attempt": attempt, "metrics": step}
    write_marker(ctx.store, ctx.engine_id, marker)
    ctx.done[req.step_index] = marker  # safe now: named if the run has to stop (driver, storage outage)
    return True


def _metrics(ctx: SweepContext, req: StepRequest, outcome: StepOutcome, attempt: int) -> StepMetrics:
    table = ctx.store.read_table(records_prefix(req.engine_id, req.step_index), schema=RECORD_SCHEMA)
    table = select_attempt(table, attempt)  # nothing of an incomplete attempt enters the metrics
    end = outcome.window_end_ns if outcome.window_end_ns is not None else outcome.window_start_ns
    if end <= outcome.window_start_ns:
        end = outcome.window_start_ns + 1
    active = [r for r in outcome.reports if r.get("active", r["concurrency"] > 0)]
    lag = max((r["lag_p99_ms"] for r in active), default=0.0)
    uncertainty = max((o.uncertainty_ns for o in ctx.fleet.offsets), default=0) / 1e6
    return compute_step(
        table=table, window=Window(outcome.window_start_ns, end), slo=ctx.spec.slo, validity=ctx.spec.validity,
        target_concurrency=req.concurrency, step_index=req.step_index, loop_lag_p99_ms=lag,
        clock_uncertainty_ms=uncertainty,
    )  # fmt: skip


def knee_of(steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The highest-load step holding the SLO (metrics.find_knee's rule, over step dicts)."""
    holding = [s for s in steps if s.get("slo_held") and not s.get("failed")]
    if not holding:
        return None
    return max(holding, key=lambda s: (s["concurrency"], s["step_index"]))
