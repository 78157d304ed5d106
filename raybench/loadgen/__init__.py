"""The load generator: OpenAI streaming client, SSE parsing, closed-loop runner, self-monitoring.

Knows requests, not sweeps. The Ray actor lives in `raybench.loadgen.actor` (imported on demand).
"""

from raybench.loadgen.client import RequestOutcome, build_payload, send_streaming
from raybench.loadgen.closed_loop import ClosedLoopResult, Shard, run_closed_loop
from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.lag import LoopLagMonitor
from raybench.loadgen.sse import SSEDecoder, SSEEvent

__all__ = [
    "ClosedLoopResult",
    "Endpoint",
    "LoopLagMonitor",
    "RequestOutcome",
    "SSEDecoder",
    "SSEEvent",
    "Shard",
    "build_payload",
    "run_closed_loop",
    "send_streaming",
]
