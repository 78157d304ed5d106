"""The fake server's own intake delay, and why the fidelity truth uses the kernel's receive stamp.

    python benchmarks/fidelity_intake.py                      # concurrency 1, 8, 64; ITL 10 ms; lean client
    python benchmarks/fidelity_intake.py --concurrency 1 64 256 --itl-ms 20

For every request the fake (raybench.testing.fake_http) keeps two instants: `received_ns`, the kernel's
stamp when the request reached its socket, and `read_ns`, when the fake's event loop read it. Their gap is
the fake's own intake queueing: with every stream scripted alike the closed-loop streams stay phase-aligned,
the fake writes its chunks in bursts, and a request arriving during a burst waits for the loop. Measured from
`read_ns`, that wait would count as the client's TTFT error; from `received_ns` it does not. The client side
(kernel arrival - the client's `sent_ns`) is what the client's own send path adds; it is matched per request
on the first arrival at or after each send (closed-loop sends on distinct connections reach the fake in send
order), so it is approximate, the intake gap is exact.
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
    """One concurrency level: client side and intake gap P50/P90 (ms), TTFT error P50 against each arrival."""
    server.script(itl_ms=itl_ms)
    load = {"concurrency": concurrency, "duration_s": duration_s, "client": client, "isl": 128, "osl": 128}
    report = run_raybench(server, Path(tempfile.mkdtemp()), **load)
    truth = server.truth()
    intake_ms = np.array([(s["read_ns"] - s["received_ns"]) / 1e6 for s in truth])
    received = np.array(sorted(s["received_ns"] for s in truth))
    sent = np.array(sorted(r["sent_ns"] for r in report["records"]))
    index = np.searchsorted(received, sent)
    matched = index < len(received)
    client_ms = (received[index[matched]] - sent[matched]) / 1e6
    ttft_client = np.median(
        [(r["first_token_ns"] - r["sent_ns"]) / 1e6 for r in report["records"] if r.get("first_token_ns")]
    )
    done = [s for s in truth if s["chunk_ns"]]
    ttft_kernel = np.median([(s["chunk_ns"][0] - s["received_ns"]) / 1e6 for s in done])
    ttft_read = np.median([(s["chunk_ns"][0] - s["read_ns"]) / 1e6 for s in done])
    sources = ",".join(sorted({s["received_source"] for s in truth}))
    return (
        f"| {concurrency} | {itl_ms:g} | {sources} | {np.median(client_ms):.3f} | {np.percentile(client_ms, 90):.3f} "
        f"| {np.median(intake_ms):.3f} | {np.percentile(intake_ms, 90):.3f} "
        f"| {ttft_client - ttft_kernel:+.3f} | {ttft_client - ttft_read:+.3f} |"
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
        print(
            "| concurrency | ITL ms | arrival stamp | client side P50 ms | client side P90 ms | fake intake P50 ms "
            "| fake intake P90 ms | TTFT err P50 vs arrival | TTFT err P50 vs fake's read |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for concurrency in args.concurrency:
            print(intake_row(server, concurrency, args.itl_ms, args.duration_s, args.client), flush=True)
    finally:
        server.close()


if __name__ == "__main__":
    main()
