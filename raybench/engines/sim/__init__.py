"""The built-in simulated LLM engine: a continuous-batching cost model behind an OpenAI HTTP server."""

from __future__ import annotations

from raybench.engines.sim.config import SimConfig
from raybench.engines.sim.cost import CostModel, LinearCostModel
from raybench.engines.sim.scheduler import (
    Clock,
    LoopClock,
    Scheduler,
    SchedulerStats,
    TokenEvent,
    TokenStream,
)
from raybench.engines.sim.server import CONFIG_KEY, SCHEDULER_KEY, build_app, main, parse_args, serve

__all__ = [
    "CONFIG_KEY",
    "SCHEDULER_KEY",
    "Clock",
    "CostModel",
    "LinearCostModel",
    "LoopClock",
    "Scheduler",
    "SchedulerStats",
    "SimConfig",
    "TokenEvent",
    "TokenStream",
    "build_app",
    "main",
    "parse_args",
    "serve",
]
