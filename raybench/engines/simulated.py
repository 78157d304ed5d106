"""The `simulated` engine kind: launches the built-in simulated OpenAI server as a process."""

from __future__ import annotations

import json
import sys

from raybench.config.engine import SimulatedEngineSpec
from raybench.engines.base import EngineAdapter, LaunchPlan, register
from raybench.engines.metrics import DIALECTS, MetricMap
from raybench.version import __version__

__all__ = ["SimulatedAdapter"]


@register("simulated")
class SimulatedAdapter(EngineAdapter):
    """Runs `python -m raybench.engines.sim` per replica, exactly as a real engine process is run."""

    spec: SimulatedEngineSpec

    def launch_plan(self, host: str, port: int) -> LaunchPlan:
        argv = [
            sys.executable,
            "-m",
            "raybench.engines.sim",
            "--host",
            host,
            "--port",
            str(port),
            "--model",
            self.served_model,
            "--log-interval-s",
            "5",
            "--config-json",
            json.dumps(self.spec.sim_config(), sort_keys=True),
        ]
        return LaunchPlan(argv=argv, port=port, ready_timeout_s=60.0)

    def metric_map(self) -> MetricMap:
        """vLLM's names (the simulator exposes them) plus its own CPU time, for each step's `sim_cpu_share`."""
        names = {**DIALECTS["vllm"].names, "sim_cpu_seconds_total": ("raybench_sim_cpu_seconds_total",)}
        return MetricMap(names)

    def motor(self) -> str:
        return "simulated"

    def motor_version(self) -> str:
        s = self.spec
        return f"raybench-sim {__version__} ({s.profile} profile, {s.model_preset} {s.precision} on {s.tp}x {s.gpu})"
