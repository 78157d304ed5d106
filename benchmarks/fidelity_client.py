"""One raybench generator as its own process, for benchmarks/fidelity.py: runs one load, dumps raw records.

`python benchmarks/fidelity_client.py URL OUT.json --concurrency 64 --requests 320` (closed loop) or
`--rate 200 --duration-s 10 [--arrival constant]` (open loop); `--client aiohttp` for the A/B baseline.
The generator is exactly the actor's: the same session settings, runners, uvloop loop and lag monitor,
without Ray around it.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from raybench.loadgen.closed_loop import Shard, run_closed_loop
from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.lag import LoopLagMonitor
from raybench.loadgen.loop_thread import new_event_loop
from raybench.loadgen.open_loop import run_open_loop
from raybench.loadgen.session import CLIENTS, StreamSession, new_session, warm_connections
from raybench.testing.prompts import FixedPrompts

_FIELDS = (
    "request_id",
    "scheduled_ns",
    "sent_ns",
    "first_token_ns",
    "last_token_ns",
    "done_ns",
    "chunk_ns",
    "chunk_tokens",
    "output_tokens",
    "status",
    "error_type",
)


async def _main(args: argparse.Namespace) -> dict[str, Any]:
    endpoint = Endpoint((args.url,), "fake-model", api=args.api)
    shard = Shard(
        concurrency=args.concurrency,
        duration_s=args.duration_s,
        max_requests=args.requests,
        prompt_base=0,
        prompt_stride=1,
        prompt_offset=0,
        timeout_s=120.0,
        request_id_prefix="r:",
        rate_per_s=args.rate,
        arrival=args.arrival,
    )
    rows: list[dict[str, Any]] = []
    session: StreamSession = new_session(args.client)
    try:
        await warm_connections(session, endpoint, args.concurrency or min(int(args.rate or 1), 256))
        monitor = LoopLagMonitor()
        monitor.start()
        runner = run_open_loop if args.rate is not None else run_closed_loop
        start_ns = time.perf_counter_ns() + 50_000_000
        result = await runner(session, endpoint, FixedPrompts(args.isl, args.osl), shard, start_ns, rows.append)
        stats = await monitor.stop()
    finally:
        await session.close()
    return {
        "records": [{k: r[k] for k in _FIELDS} for r in rows],
        "issued": result.issued,
        "start_ns": start_ns,
        "reached_target_ns": result.reached_target_ns,
        "stopped_issuing_ns": result.stopped_issuing_ns,
        "client_impl": session.impl_for(endpoint),
        **stats,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("out")
    parser.add_argument("--api", default="completions", choices=["completions", "chat"])
    parser.add_argument("--concurrency", type=int, default=0, help="closed loop slots, or the open-loop cap (0: none)")
    parser.add_argument("--rate", type=float, default=None, help="open loop: requests per second")
    parser.add_argument("--arrival", default="constant", choices=["constant", "poisson", "gamma"])
    parser.add_argument("--requests", type=int, default=None)
    parser.add_argument("--duration-s", type=float, default=None)
    parser.add_argument("--client", default="auto", choices=CLIENTS, help="HTTP client (StreamSession)")
    parser.add_argument("--isl", type=int, default=128)
    parser.add_argument("--osl", type=int, default=128)
    args = parser.parse_args()
    loop = new_event_loop()
    try:
        report = loop.run_until_complete(_main(args))
    finally:
        loop.close()
    with open(args.out, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
