"""The built-in simulated LLM engine: continuous batching over a roofline model, behind an OpenAI server."""

from __future__ import annotations

from raybench.engines.sim.cli import describe, parse_args
from raybench.engines.sim.config import Resolved, SimConfig
from raybench.engines.sim.core import CoreStats, EngineCore
from raybench.engines.sim.cost import BatchShape, CostModel, LinearCostModel
from raybench.engines.sim.engine import DisaggregatedEngine, Engine, build_engine
from raybench.engines.sim.kvcache import KvCache, block_hashes
from raybench.engines.sim.perf import RooflineCostModel, kv_bytes_per_token
from raybench.engines.sim.scheduler import (
    Clock,
    LoopClock,
    Scheduler,
    SchedulerStats,
    TokenEvent,
    TokenStream,
)
from raybench.engines.sim.server import CONFIG_KEY, SCHEDULER_KEY, build_app, main, serve

__all__ = [
    "CONFIG_KEY",
    "SCHEDULER_KEY",
    "BatchShape",
    "Clock",
    "CoreStats",
    "CostModel",
    "DisaggregatedEngine",
    "Engine",
    "EngineCore",
    "KvCache",
    "LinearCostModel",
    "LoopClock",
    "Resolved",
    "RooflineCostModel",
    "Scheduler",
    "SchedulerStats",
    "SimConfig",
    "TokenEvent",
    "TokenStream",
    "block_hashes",
    "build_app",
    "build_engine",
    "describe",
    "kv_bytes_per_token",
    "main",
    "parse_args",
    "serve",
]
