"""One synchronized sweep step: shard the load, arm every generator (ready barrier), start them at one
instant, collect reports and the measurement window."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import ray
from rich.progress import Progress

from raybench.config.load import LoadSpec
from raybench.loadgen.actor import GeneratorStep
from raybench.loadgen.closed_loop import Shard
from raybench.sweep.clock import start_skew_ns
from raybench.sweep.fleet import Fleet, split_evenly
from raybench.sweep.interrupt import check_interrupt

__all__ = [
    "OpenLoop",
    "StepOutcome",
    "StepRequest",
    "make_request",
    "run_step",
    "step_label",
    "sweep_requests",
]

# After the ready barrier only the start message is in flight: it must reach every generator before
# the instant (a Ray call is ~1 ms; a loaded node can take tens).
_START_LEAD_NS = 100_000_000
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
    open_loop: OpenLoop | None = None  # set: `concurrency` is ignored, the step is a request rate
    attempt: int = 0  # which execution of this step (records carry it; the step's marker names the counted one)

    @property
    def level(self) -> float:
        """The step's load: its concurrency, or its request rate in open loop."""
        return self.open_loop.rate_per_s if self.open_loop is not None else float(self.concurrency)

    def with_attempt(self, attempt: int) -> StepRequest:
        return replace(self, attempt=attempt)


@dataclass(frozen=True)
class OpenLoop:
    """An open-loop step's global schedule; `max_concurrency` caps the fleet's requests in flight."""

    rate_per_s: float
    arrival: str = "poisson"
    burstiness: float = 1.0
    seed: int = 0
    max_concurrency: int | None = None


@dataclass(frozen=True)
class StepOutcome:
    """Every generator's report, the common start instant, and the measurement window (driver clock)."""

    reports: list[dict[str, Any]]
    start_wall_ns: int
    window_start_ns: int
    window_end_ns: int | None

    @property
    def start_skew_ns(self) -> int | None:
        """Spread of the generators' actual start instants (driver clock)."""
        return start_skew_ns([r.get("started_wall_ns") for r in self.reports if r.get("active", True)])

    def shares(self) -> list[dict[str, Any]]:
        """Each generator's share of the step, as recorded in the step's marker and summary."""
        keys = (
            "generator_id",
            "node_id",
            "concurrency",
            "max_requests",
            "issued",
            "records",
            "started_wall_ns",
            "client_impl",
        )
        return [{k: r.get(k) for k in keys} for r in self.reports]


def make_request(load: LoadSpec, run_id: str, engine_id: str, index: int, level: float) -> StepRequest:
    """Step `index` of the sweep at load `level` (a concurrency, or a rate in `mode: rate`)."""
    timeout = load.request_timeout_s
    if load.mode == "rate":
        ol = OpenLoop(level, load.arrival, load.burstiness, load.seed, load.max_concurrency)
        cap = load.max_concurrency or 0
        return StepRequest(run_id, engine_id, index, "measure", cap, load.duration_s, load.requests, timeout, ol)
    return StepRequest(run_id, engine_id, index, "measure", int(level), load.duration_s, load.requests, timeout)


def sweep_requests(load: LoadSpec, run_id: str, engine_id: str) -> tuple[StepRequest | None, list[StepRequest]]:
    """The warm-up (None without one) and the listed steps of `load`, in order.

    The warm-up (step -1, phase `warmup`) runs at the first step's load for `warmup_requests`
    requests or `warmup_s` seconds; its records are stored and excluded from metrics.
    """
    steps = [make_request(load, run_id, engine_id, i, level) for i, level in enumerate(load.levels())]
    warm = None
    if load.warmup_requests or load.warmup_s is not None:
        first = steps[0]
        requests = load.warmup_requests or None
        warm = replace(first, step_index=-1, phase="warmup", requests=requests, duration_s=load.warmup_s)
    return warm, steps


def step_label(req: StepRequest) -> str:
    """How a progress bar names the step's load."""
    if req.open_loop is None:
        return f"concurrency {req.concurrency}"
    cap = f", cap {req.open_loop.max_concurrency}" if req.open_loop.max_concurrency else ""
    return f"rate {req.open_loop.rate_per_s:g}/s {req.open_loop.arrival}{cap}"


def _shards(req: StepRequest, generators: int) -> list[Shard]:
    if req.open_loop is not None:
        return _open_loop_shards(req, req.open_loop, generators)
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


def _open_loop_shards(req: StepRequest, ol: OpenLoop, generators: int) -> list[Shard]:
    """Generator g sends global arrivals g, g + G, ...: together, exactly the global schedule."""
    caps = split_evenly(ol.max_concurrency, generators) if ol.max_concurrency is not None else [0] * generators
    budgets = split_evenly(req.requests, generators) if req.requests is not None else [None] * generators
    return [
        Shard(
            concurrency=max(cap, 1) if ol.max_concurrency is not None else 0,
            duration_s=req.duration_s,
            max_requests=budget,
            prompt_base=(req.step_index + 1) * _PROMPTS_PER_STEP,
            prompt_stride=generators,
            prompt_offset=g,
            timeout_s=req.timeout_s,
            request_id_prefix=f"{req.engine_id}:{req.step_index}:",
            rate_per_s=ol.rate_per_s,
            arrival=ol.arrival,
            burstiness=ol.burstiness,
            seed=ol.seed,
        )
        for g, (cap, budget) in enumerate(zip(caps, budgets))
    ]


def run_step(fleet: Fleet, req: StepRequest, progress: Progress | None, label: str) -> StepOutcome:
    """Run `req` on the whole fleet, showing a progress bar; returns when every generator is done.

    Raises GeneratorLost (raybench.sweep.fleet) when a generator's actor died: the attempt is incomplete.
    """
    shards = _shards(req, len(fleet.ids))
    rate = req.open_loop.rate_per_s if req.open_loop is not None else None
    steps = [
        GeneratorStep(
            req.run_id, req.engine_id, req.step_index, req.phase, req.concurrency, shard, off.offset_ns, rate,
            req.attempt,
        )
        for shard, off in zip(shards, fleet.offsets)
    ]  # fmt: skip
    fleet.arm(steps)  # ready barrier: shards held, connections warm
    start_wall_ns = time.time_ns() + _START_LEAD_NS
    pending = fleet.start(start_wall_ns)
    total = float(req.requests) if req.requests is not None else float(req.duration_s or 0)
    task = progress.add_task(label, total=total, requests=0) if progress is not None else None
    while True:
        ready, _ = ray.wait(pending, num_returns=len(pending), timeout=0.5)
        check_interrupt()
        if progress is not None and task is not None:
            _show(progress, task, fleet.progress(), req, start_wall_ns, total)
        if len(ready) == len(pending):
            break
    reports = fleet.collect(pending)
    if progress is not None and task is not None:
        progress.update(task, completed=total, requests=sum(r["records"] for r in reports))
    return StepOutcome(reports, start_wall_ns, *_window(reports, start_wall_ns))


def _show(progress: Progress, task: Any, done: int, req: StepRequest, start_wall_ns: int, total: float) -> None:
    if req.requests is not None:
        progress.update(task, completed=done, requests=done)
    else:
        elapsed = max(time.time_ns() - start_wall_ns, 0) / 1e9
        progress.update(task, completed=min(elapsed, total), requests=done)


def _window(reports: list[dict[str, Any]], start_wall_ns: int) -> tuple[int, int | None]:
    """Opens when every active generator reached its target load; closes when the first stopped issuing."""
    active = [r for r in reports if r.get("active", r["concurrency"] > 0)]
    reached = [r["reached_target_ns"] for r in active]
    stopped = [r["stopped_issuing_ns"] for r in active if r["stopped_issuing_ns"] is not None]
    start = max(reached) if reached and all(x is not None for x in reached) else start_wall_ns
    end = min(stopped) if stopped else None
    return start, end
