"""The load generator: OpenAI streaming client, SSE parsing, closed- and open-loop runners, self-monitoring.

Knows requests, not sweeps. The Ray actor lives in `raybench.loadgen.actor` (imported on demand).
"""

from raybench.loadgen.client import RequestOutcome, build_payload, encode_body, read_events, send_streaming
from raybench.loadgen.closed_loop import ClosedLoopResult, Shard, run_closed_loop
from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.lag import LoopLagMonitor
from raybench.loadgen.open_loop import MonotonicClock, run_open_loop
from raybench.loadgen.schedule import ArrivalSchedule, arrival_offsets_ns
from raybench.loadgen.session import new_session, warm_connections
from raybench.loadgen.sse import SSEDecoder, SSEEvent

__all__ = [
    "ArrivalSchedule",
    "ClosedLoopResult",
    "Endpoint",
    "LoopLagMonitor",
    "MonotonicClock",
    "RequestOutcome",
    "SSEDecoder",
    "SSEEvent",
    "Shard",
    "arrival_offsets_ns",
    "build_payload",
    "encode_body",
    "new_session",
    "read_events",
    "run_closed_loop",
    "run_open_loop",
    "send_streaming",
    "warm_connections",
]
