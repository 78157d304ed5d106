"""Load generator fidelity (issue 3): reported minus true TTFT/ITL/throughput, raybench vs AIPerf vs GuideLLM.

One fake OpenAI server process (raybench.testing.fake_openai) records the instant each request reached
the host (the kernel's receive stamp) and the instant it wrote every chunk; each tool drives it from its own
process(es) and its reported figures are compared with that truth (same host, same monotonic clock). The
last closed-loop column also compares with the instant the fake's loop read each request, the truth this
benchmark used before (it leaves the fake's own intake queueing in the tool's error). Run from the
repository root:

    python benchmarks/fidelity.py                        # every row, every tool found
    python benchmarks/fidelity.py --tools raybench       # raybench only
    python benchmarks/fidelity.py --rows closed64 --tools raybench,aiperf
    python benchmarks/fidelity.py --tools raybench --clients lean,aiohttp --repeats 3   # interleaved A/B

Peers are looked up in scratch venvs (/tmp/venvs/aiperf, /tmp/venvs/guidellm; see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fidelity_metrics import raybench_figures, truth_figures
from fidelity_peers import PEERS

ROWS = ("closed64", "closed256", "sweep", "open", "stall")
ISL, OSL, TTFT_MS = 128, 128, 100.0


class FakeServer:
    """The fake as a child process with its own CPU; scripted and read back over its /_fake endpoints."""

    def __init__(self) -> None:
        cmd = [sys.executable, "-m", "raybench.testing.fake_openai", "--port", "0"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}"

    def call(self, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method="POST" if data is not None else "GET")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def script(self, itl_ms: float, ttft_ms: float = TTFT_MS) -> None:
        self.call("/_fake/reset", {})
        self.call("/_fake/script", {"ttft_ms": ttft_ms, "itl_ms": itl_ms})

    def truth(self) -> list[dict[str, Any]]:
        return list(self.call("/_fake/truth")["streams"])

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def run_raybench(server: FakeServer, workdir: Path, **load: Any) -> dict[str, Any]:
    """One raybench generator process (benchmarks/fidelity_client.py) against the fake; its raw report."""
    out = workdir / f"raybench-{time.monotonic_ns()}.json"
    cmd = [sys.executable, str(Path(__file__).with_name("fidelity_client.py")), server.url, str(out)]
    for key, value in load.items():
        if value is not None:
            cmd += [f"--{key.replace('_', '-')}", str(value)]
    subprocess.run(cmd, check=True)
    return dict(json.loads(out.read_text()))


def closed(
    server: FakeServer, tool: str, workdir: Path, concurrency: int, itl_ms: float, rounds: int, client: str = "auto"
) -> dict[str, Any]:
    """Closed loop at `concurrency` for about `rounds` requests per slot; reported and true figures.
    `client` (raybench only): the generator's HTTP client, auto / lean / aiohttp."""
    server.script(itl_ms)
    requests = concurrency * rounds
    load_before = os.getloadavg()[0]
    if tool == "raybench":
        report = run_raybench(
            server, workdir, concurrency=concurrency, requests=requests, isl=ISL, osl=OSL, client=client
        )
        reported = raybench_figures(report)
        window = reported.pop("window")
        tool = _label(client)
    else:
        reported = PEERS[tool](server.url, workdir, concurrency, requests, ISL, OSL)
        window = None
    streams = server.truth()
    return {
        "tool": tool,
        "concurrency": concurrency,
        "itl_ms": itl_ms,
        "reported": reported,
        "truth": truth_figures(streams, window=window),  # type: ignore[arg-type]
        "truth_read": truth_figures(streams, window=window, arrival="read_ns"),  # type: ignore[arg-type]
        "arrival_sources": sorted({s["received_source"] for s in streams}),
        "load": (load_before, os.getloadavg()[0]),
    }


def _label(client: str) -> str:
    return "raybench" if client == "auto" else f"raybench[{client}]"


def open_loop(
    server: FakeServer, workdir: Path, rate: float, duration_s: float, stall_ms: float = 0, client: str = "auto"
) -> dict[str, Any]:
    """raybench open loop at `rate` (short outputs); with `stall_ms`, the server freezes 2 s into the run."""
    server.script(itl_ms=10.0)
    if stall_ms:
        server.call("/_fake/stall", {"duration_ms": stall_ms, "after_ms": 2500})
    load_before = os.getloadavg()[0]
    report = run_raybench(
        server, workdir, rate=rate, duration_s=duration_s, isl=32, osl=16, arrival="constant", client=client
    )
    reported = raybench_figures(report)
    reported.pop("window")
    return {
        "tool": _label(client),
        "load": (load_before, os.getloadavg()[0]),
        "rate": rate,
        "stall_ms": stall_ms,
        "reported": reported,
        "truth": truth_figures(server.truth()),
    }


def _err(result: dict[str, Any], key: str, truth: str = "truth") -> float:
    return float(result["reported"].get(key, float("nan")) - result[truth].get(key, float("nan")))


def _ratio(result: dict[str, Any], key: str) -> float:
    return float(result["reported"].get(key, float("nan")) / result["truth"].get(key, float("nan")))


def print_closed(results: list[dict[str, Any]]) -> None:
    print("\n## Closed loop: reported - truth (ms), throughput reported/truth")
    print(
        "| tool | conc | ITL ms | TTFT P50 err | TTFT P99 err | ITL P50 err | tput ratio | truth chunks/s "
        "| loop lag P99 | CPU share / us per chunk | load avg | TTFT P50 / P99 err vs the fake's read |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        rep = r["reported"]
        lag = f"{rep['loop_lag_p99_ms']:.2f}" if "loop_lag_p99_ms" in rep else "-"
        cpu = f"{rep['cpu_share']:.2f} / {rep['cpu_us_per_chunk']:.0f}" if "cpu_share" in rep else "-"
        print(
            f"| {r['tool']} | {r['concurrency']} | {r['itl_ms']:g} | {_err(r, 'ttft_p50_ms'):+.2f} | "
            f"{_err(r, 'ttft_p99_ms'):+.2f} | {_err(r, 'itl_p50_ms'):+.3f} | {_ratio(r, 'throughput_tok_s'):.4f} | "
            f"{r['truth'].get('chunks_per_s', float('nan')):,.0f} | {lag} | {cpu} | {_load(r)} | "
            f"{_err(r, 'ttft_p50_ms', 'truth_read'):+.2f} / {_err(r, 'ttft_p99_ms', 'truth_read'):+.2f} |"
        )


def _load(result: dict[str, Any]) -> str:
    before, after = result.get("load", (float("nan"), float("nan")))
    return f"{before:.1f}-{after:.1f}"


def print_open(results: list[dict[str, Any]]) -> None:
    print("\n## Open loop (raybench): achieved rate, send lag, TTFT-from-schedule")
    print(
        "| client | target req/s | stall ms | sent | achieved req/s | rate err % | send lag P50 ms | send lag P99 ms | "
        "TTFT P99 ms | TTFT-from-schedule P99 ms | loop lag P99 | CPU | load avg |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        rep = r["reported"]
        achieved = rep.get("achieved_rate_per_s", float("nan"))
        print(
            f"| {r['tool']} | {r['rate']:g} | {r['stall_ms']:g} | {rep['requests']:.0f} | {achieved:.2f} | "
            f"{100 * (achieved / r['rate'] - 1):+.2f} | {rep['send_lag_p50_ms']:.3f} | {rep['send_lag_p99_ms']:.3f} | "
            f"{rep['ttft_p99_ms']:.1f} | {rep['ttft_sched_p99_ms']:.1f} | {rep['loop_lag_p99_ms']:.2f} | "
            f"{rep['cpu_share']:.2f} | {_load(r)} |"
        )


def sweep(
    server: FakeServer, tool: str, workdir: Path, levels: list[int], client: str = "auto"
) -> list[dict[str, Any]]:
    """Concurrency up until the TTFT P99 error passes 2 ms (ITL 20 ms): the largest level that held."""
    results = []
    for level in levels:
        result = closed(server, tool, workdir, level, 20.0, rounds=3, client=client)
        results.append(result)
        if abs(_err(result, "ttft_p99_ms")) >= 2.0:
            break
    return results


def run_rows(
    server: FakeServer, tool: str, workdir: Path, rows: set[str], args: argparse.Namespace, client: str
) -> Any:
    """Every requested row for one tool (and, for raybench, one client): (closed results, open results)."""
    closed_results: list[dict[str, Any]] = []
    open_results: list[dict[str, Any]] = []
    if "closed64" in rows:
        closed_results.append(closed(server, tool, workdir, 64, 10.0, rounds=5, client=client))
    if "closed256" in rows:
        closed_results.append(closed(server, tool, workdir, 256, 20.0, rounds=3, client=client))
    if "sweep" in rows:
        closed_results += sweep(server, tool, workdir, [int(x) for x in args.sweep.split(",")], client)
    if tool == "raybench" and "open" in rows:
        open_results += [open_loop(server, workdir, rate, 10.0, client=client) for rate in (50.0, 200.0, 500.0)]
    if tool == "raybench" and "stall" in rows:
        open_results.append(open_loop(server, workdir, 100.0, 8.0, stall_ms=2000, client=client))
    return closed_results, open_results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", default="raybench,aiperf,guidellm")
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--sweep", default="64,128,256,384,512,768")
    parser.add_argument("--clients", default="auto", help="raybench HTTP clients to compare: auto, lean, aiohttp")
    parser.add_argument("--repeats", type=int, default=1, help="raybench runs per client, interleaved A B B A ...")
    parser.add_argument("--json", default=None, help="also write every figure to this file")
    args = parser.parse_args()
    tools = [t for t in args.tools.split(",") if t == "raybench" or t in PEERS]
    rows = set(args.rows.split(","))
    clients = args.clients.split(",")
    server = FakeServer()
    closed_results: list[dict[str, Any]] = []
    open_results: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="fidelity-") as tmp:
            workdir = Path(tmp)
            for repeat in range(args.repeats if "raybench" in tools else 0):
                for client in clients if repeat % 2 == 0 else clients[::-1]:  # ABBA: drift in load cancels
                    c, o = run_rows(server, "raybench", workdir, rows, args, client)
                    closed_results += c
                    open_results += o
            for tool in (t for t in tools if t != "raybench"):
                closed_results += run_rows(server, tool, workdir, rows, args, "auto")[0]
    finally:
        server.close()
    print(f"\nmachine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end")
    print_closed(closed_results)
    if open_results:
        print_open(open_results)
    if args.json:
        Path(args.json).write_text(json.dumps({"closed": closed_results, "open": open_results}, indent=1, default=str))


if __name__ == "__main__":
    main()
