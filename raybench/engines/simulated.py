"""The `simulated` engine kind: launches the built-in simulated OpenAI server as a process."""

from __future__ import annotations

import sys

from raybench.config.engine import SimulatedEngineSpec
from raybench.engines.base import EngineAdapter, LaunchPlan, register
from raybench.version import __version__

__all__ = ["SimulatedAdapter"]


@register("simulated")
class SimulatedAdapter(EngineAdapter):
    """Runs `python -m raybench.engines.sim` per replica, exactly as a real engine process is run."""

    spec: SimulatedEngineSpec

    def launch_plan(self, host: str, port: int) -> LaunchPlan:
        s = self.spec
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
            "--max-num-seqs",
            str(s.max_num_seqs),
            "--iteration-overhead-ms",
            str(s.iteration_overhead_ms),
            "--decode-ms-per-seq",
            str(s.decode_ms_per_seq),
            "--prefill-ms-per-token",
            str(s.prefill_ms_per_token),
        ]
        return LaunchPlan(argv=argv, port=port, ready_timeout_s=60.0)

    def motor(self) -> str:
        return "simulated"

    def motor_version(self) -> str:
        return f"raybench-sim {__version__} ({self.spec.profile} profile)"
