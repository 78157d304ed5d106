"""A Ray cluster started the way users start one, `ray start --head` plus `ray start --address` workers, every
node on 127.0.0.1 with its own temp dir and free ports; stopped by the processes it started, never `ray stop`.

Loopback on Ray 2.60 (read in ray/_private/services.py and ray/scripts/scripts.py): `ray start` passes
`--node-ip-address 127.0.0.1` through `resolve_ip_for_localhost`, which swaps a loopback address for the
host's outward one (`node_ip_address_from_perspective`) unless RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER
is 0, and a driver that later connects to such a node looks for it on the outward address (and hangs where
that address is not served). With the variable at 0 nothing is rewritten, but `ray start --address` then
refuses to add a worker node (a guard meant for Windows and macOS). So every node runs with the variable at 0
(and so does every job driver, which inherits the raylet's environment), and the worker's `ray start` runs
the real Ray CLI with only that guard lifted (`_ClustersAllowed`). A real cluster has none of this: its
nodes have real addresses.

    python -m raybench.testing.ray_start up --gpus 0,2     # head 0 GPUs, one worker with 2; Ctrl-C stops
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from raybench.testing.local_cluster import wait_until_stopped

__all__ = ["RAY_CLI", "LoopbackRayCluster", "NodeSpec", "free_port", "start_ray_cluster"]

RAY_CLI = [sys.executable, "-m", "ray.scripts.scripts"]  # `ray`, from this interpreter's Ray
_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


@dataclass(frozen=True)
class NodeSpec:
    """One `ray start`: its CPUs, GPUs (advertised; none need exist) and custom resources."""

    num_cpus: int = 2
    num_gpus: int = 0
    resources: dict[str, float] = field(default_factory=dict)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LoopbackRayCluster:
    """A head and workers started by `ray start --block` in sessions of their own, and how to reach them."""

    temp_dir: Path
    gcs_port: int
    dashboard_port: int
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gcs_port}"

    @property
    def dashboard_url(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def env(self) -> dict[str, str]:
        """The environment for a process that talks to this cluster (ray job submit, a driver)."""
        return {**os.environ, **_ENV}

    def stop(self, timeout_s: float = 20.0) -> list[int]:
        """SIGTERM each `ray start --block` (it stops its node's processes), then SIGKILL whatever of this
        cluster is left: its sessions, and job drivers (own sessions) that name its temp dir or address.
        Returns the pids that had to be killed."""
        for proc in reversed(self.processes):  # workers first, the head last
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for proc in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
        killed = self._kill_leftovers()
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        return killed

    def leftovers(self) -> list[int]:
        """Pids still alive that belong to this cluster."""
        sessions = {p.pid for p in self.processes}
        marks = (str(self.temp_dir).encode(), f"127.0.0.1:{self.gcs_port}".encode())
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid() and _belongs(entry, sessions, marks):
                found.append(int(entry.name))
        return found

    def _kill_leftovers(self) -> list[int]:
        killed = self.leftovers()
        for pid in killed:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        return killed


def _belongs(entry: Path, sessions: set[int], marks: tuple[bytes, ...]) -> bool:
    try:
        stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        if stat[0] == "Z":
            return False
        if int(stat[3]) in sessions:  # fields after the name: state, ppid, pgrp, session
            return True
        blob = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
    except (OSError, IndexError, ValueError):
        return False
    return any(mark in blob for mark in marks)


def _ports(head: bool) -> list[str]:
    names = [
        "--dashboard-agent-listen-port",
        "--dashboard-agent-grpc-port",
        "--runtime-env-agent-port",
        "--metrics-export-port",
        "--node-manager-port",
        "--object-manager-port",
    ]
    if head:
        names.append("--ray-client-server-port")
    return [arg for name in names for arg in (name, str(free_port()))]


def _node_args(node: NodeSpec, temp_dir: Path) -> list[str]:
    args = [
        "--block",
        "--node-ip-address",
        "127.0.0.1",
        "--num-cpus",
        str(node.num_cpus),
        "--num-gpus",
        str(node.num_gpus),
        "--temp-dir",
        str(temp_dir),
        "--disable-usage-stats",
    ]
    if node.resources:
        args += ["--resources", json.dumps(node.resources)]
    return args


def start_ray_cluster(head: NodeSpec, workers: list[NodeSpec], timeout_s: float = 90.0) -> LoopbackRayCluster:
    """Start the head (dashboard on 127.0.0.1), then each worker; returns once every node is alive."""
    temp_dir = Path(tempfile.mkdtemp(prefix="rbray", dir="/tmp"))  # short: Ray's socket paths have a length limit
    cluster = LoopbackRayCluster(temp_dir, free_port(), free_port())
    head_argv = [
        *RAY_CLI,
        "start",
        "--head",
        "--port",
        str(cluster.gcs_port),
        "--dashboard-host",
        "127.0.0.1",
        "--dashboard-port",
        str(cluster.dashboard_port),
        "--include-dashboard",
        "true",
        *_node_args(head, temp_dir),
        *_ports(head=True),
    ]
    try:
        _start_node(cluster, head_argv, "head", 1, timeout_s)
        for index, worker in enumerate(workers):
            argv = [
                sys.executable,
                "-m",
                "raybench.testing.ray_start",
                "_ray",
                "start",
                "--address",
                cluster.address,
                *_node_args(worker, temp_dir),
                *_ports(head=False),
            ]
            _start_node(cluster, argv, f"worker-{index}", 2 + index, timeout_s)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _start_node(cluster: LoopbackRayCluster, argv: list[str], name: str, count: int, timeout_s: float) -> None:
    """Launch one `ray start` and wait until `count` nodes are alive. On a loaded machine a raylet can give up
    waiting for its own agents (Ray's timeouts are fixed at 15-30 s), so a node that exits is started again once."""
    for attempt in range(2):
        log = cluster.temp_dir / f"{name}-{attempt}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=cluster.env(), start_new_session=True
            )
        cluster.processes.append(proc)
        try:
            _wait_for_nodes(cluster, proc, log, count, timeout_s)
            return
        except RuntimeError:
            _kill_session(proc.pid)
            if attempt:
                raise


def _kill_session(sid: int) -> None:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _belongs(entry, {sid}, ()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)


def _wait_for_nodes(
    cluster: LoopbackRayCluster, proc: subprocess.Popen[bytes], log: Path, count: int, timeout_s: float
) -> None:
    """Until the dashboard lists `count` alive nodes; a `ray start` that exits fails at once, with its log."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"`ray start` exited with {proc.returncode}; its log ends:\n{tail}")
        if _alive_nodes(cluster.dashboard_url) >= count:
            return
        time.sleep(0.5)
    raise TimeoutError(f"{count} Ray node(s) not alive within {timeout_s:g} s (logs in {cluster.temp_dir})")


def _alive_nodes(dashboard_url: str) -> int:
    try:
        with urllib.request.urlopen(f"{dashboard_url}/nodes?view=summary", timeout=5) as reply:
            body: dict[str, Any] = json.load(reply)
    except (OSError, ValueError):
        return 0
    summary = body.get("data", {}).get("summary", [])
    return sum(1 for n in summary if n.get("raylet", {}).get("state") == "ALIVE")


class _ClustersAllowed(ModuleType):
    """ray_constants as `ray start` sees it, with multi-node clusters allowed and nothing else changed."""

    ENABLE_RAY_CLUSTER = True

    def __init__(self, real: ModuleType) -> None:
        super().__init__(real.__name__)
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _ray_cli(argv: list[str]) -> int:
    """`ray ARGV` with only the multi-node guard of scripts.py lifted; addresses stay as given."""
    from ray._private import ray_constants
    from ray.scripts import scripts

    scripts.ray_constants = _ClustersAllowed(ray_constants)  # type: ignore[attr-defined]
    scripts.cli.main(args=argv, prog_name="ray")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_ray"]:
        return _ray_cli(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m raybench.testing.ray_start")
    parser.add_argument("action", choices=["up"], help="start a head and workers; Ctrl-C stops them")
    parser.add_argument("--gpus", default="0,0", help="GPUs advertised per node, head first (default 0,0)")
    parser.add_argument("--loadgen", type=float, default=0, help="`loadgen` resource on the last worker")
    args = parser.parse_args(argv)
    gpus = [int(g) for g in args.gpus.split(",")]
    workers = [NodeSpec(num_gpus=g) for g in gpus[1:]]
    if workers and args.loadgen:
        workers[-1] = NodeSpec(num_gpus=gpus[-1], resources={"loadgen": args.loadgen})
    cluster = start_ray_cluster(NodeSpec(num_gpus=gpus[0]), workers)
    print(f"Ray up: address {cluster.address}, dashboard {cluster.dashboard_url}, temp dir {cluster.temp_dir}")
    print(f"try: raybench cluster check --address {cluster.dashboard_url} jobs/quickstart.yaml ; Ctrl-C stops it")
    wait_until_stopped()
    cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
