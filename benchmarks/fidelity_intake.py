"""Where the fake server's own intake delay sits: request side (fake's `received_ns` - client's `sent_ns`).

    python benchmarks/fidelity_intake.py                      # concurrency 1, 8, 64; ITL 10 ms; lean client
    python benchmarks/fidelity_intake.py --concurrency 1 64 256 --itl-ms 20

The fake stamps a request in `data_received`, i.e. when its event loop gets to the socket. With every stream
scripted alike (same TTFT, ITL and OSL) the closed-loop streams stay phase-aligned, so the fake writes its
chunks in bursts (64 streams x one chunk each ITL) and a request arriving in a burst is stamped at the
burst's end. The client measures that wait (a real server's intake queueing is latency too), the truth does
not: it shows up as TTFT error. Each request's arrival is matched to the first stamp at or after its send
(closed-loop sends on distinct connections reach the fake in send order), so the figures are approximate.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from fidelity import FakeServer, run_raybench


def intake_row(server: FakeServer, concurrency: int, itl_ms: float, duration_s: float, client: str) -> str:
    """One concurrency level: request-side P50/P90 (ms) and the TTFT error at P50 (ms)."""
    server.script(itl_ms=itl_ms)
    load = {"concurrency": concurrency, "duration_s": duration_s, "client": client, "isl": 128, "osl": 128}
    report = run_raybench(server, Path(tempfile.mkdtemp()), **load)
    truth = server.truth()
    received = np.array(sorted(s["received_ns"] for s in truth))
    sent = np.array(sorted(r["sent_ns"] for r in report["records"]))
    index = np.searchsorted(received, sent)
    matched = index < len(received)
    request_side_ms = (received[index[matched]] - sent[matched]) / 1e6
    ttft_client = [(r["first_token_ns"] - r["sent_ns"]) / 1e6 for r in report["records"] if r.get("first_token_ns")]
    ttft_truth = [(s["chunk_ns"][0] - s["received_ns"]) / 1e6 for s in truth if s["chunk_ns"]]
    return (
        f"| {concurrency} | {itl_ms:g} | {np.median(request_side_ms):.3f} | {np.percentile(request_side_ms, 90):.3f} "
        f"| {np.median(ttft_client) - np.median(ttft_truth):+.3f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--itl-ms", type=float, default=10.0)
    parser.add_argument("--duration-s", type=float, default=6.0)
    parser.add_argument("--client", default="lean", choices=["auto", "lean", "aiohttp"])
    args = parser.parse_args()
    server = FakeServer()
    try:
        print("| concurrency | ITL ms | request side P50 ms | request side P90 ms | TTFT err P50 ms |")
        print("|---|---|---|---|---|")
        for concurrency in args.concurrency:
            print(intake_row(server, concurrency, args.itl_ms, args.duration_s, args.client), flush=True)
    finally:
        server.close()


if __name__ == "__main__":
    main()
