"""DynamoProcessActor: launches one Dynamo process (etcd, NATS, frontend or a worker) on its node and supervises it.

The process runs under raybench's guard in its own process group (raybench/deploy/process.py), so teardown,
or the actor's death, takes every process it started with it.
"""

from __future__ import annotations

import random
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import ray

from raybench.deploy.identity import env_subset, gpu_inventory
from raybench.deploy.node import node_ip
from raybench.deploy.process import ServerProcess, describe_exit, redact_argv
from raybench.deploy.supervised import SupervisedProcess
from raybench.engines.base import LaunchPlan
from raybench.engines.dynamo import ProcessPlan
from raybench.errors import EngineError
from raybench.results.store import ResultStore

__all__ = ["DynamoProcessActor", "fill", "low_free_port", "port_open"]

# Dynamo 1.6.1 parses DYN_SYSTEM_PORT as a signed 16-bit integer, so ports must stay below 32768; the OS
# hands out ephemeral ports above it. Ports are drawn from this range instead and checked free by a bind.
PORT_RANGE = (10000, 32767)


def fill(template: str, host: str, ports: dict[str, int]) -> str:
    """A plan's argv/env template with `{host}`, `{python}` and `{port:NAME}` filled for this node."""
    out = template.replace("{host}", host).replace("{python}", sys.executable)
    for name, port in ports.items():
        out = out.replace(f"{{port:{name}}}", str(port))
    return out


def low_free_port(host: str, rng: random.Random | None = None, tries: int = 200) -> int:
    """A TCP port in PORT_RANGE free on `host` right now."""
    rng = rng or random.Random()
    for _ in range(tries):
        port = rng.randint(*PORT_RANGE)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    raise OSError(f"no free port in {PORT_RANGE} on {host} after {tries} tries")


def port_open(host: str, port: int, timeout_s: float = 0.5) -> bool:
    """True when something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


@ray.remote
class DynamoProcessActor(SupervisedProcess):
    """One Dynamo process on the node Ray placed this actor (with the GPUs Ray assigned to it)."""

    def __init__(self, engine_id: str, name: str, store: ResultStore) -> None:
        self._engine_id = engine_id
        self._name = name
        self._store = store
        self._log_key = f"engines/{engine_id}/logs/{name}.log"
        self._host = node_ip()
        self._process: ServerProcess | None = None
        self._logdir = Path(tempfile.mkdtemp(prefix=f"raybench-dynamo-{name}-"))

    def start(self, plan: ProcessPlan, env: dict[str, str], timeout_s: float) -> dict[str, Any]:
        """Pick the plan's ports here, launch it, wait until its ready port accepts connections."""
        ports = {name: low_free_port(self._host) for name in plan.ports}
        argv = [fill(a, self._host, ports) for a in plan.argv]
        full_env = {k: fill(v, self._host, ports) for k, v in {**env, **plan.env}.items()}
        launch = LaunchPlan(argv=argv, port=ports.get(plan.ready_port or "", 0), env=full_env, files=plan.files)
        self._process = process = ServerProcess(launch, self._logdir / f"{self._name}.log")
        if plan.ready_port is not None:
            self._wait_port(process, ports[plan.ready_port], timeout_s)
        info: dict[str, Any] = {
            "replica": self._name,
            "role": plan.role,
            "host": self._host,
            "ports": ports,
            "pid": process.pid,
            "pgid": process.pgid,
            "node_ip": self._host,
            "node_id": ray.get_runtime_context().get_node_id(),
            "argv": redact_argv(process.argv),
            "env": {**env_subset(full_env), **{k: v for k, v in full_env.items() if k.startswith(("DYN_", "ETCD_"))}},
            "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
            "gpus": gpu_inventory() if plan.num_gpus else [],
        }
        if plan.metrics_port:  # only processes with an HTTP port have a base URL (checked and scraped)
            info["base_url"] = f"http://{self._host}:{ports[plan.metrics_port]}"
        return info

    def _wait_port(self, process: ServerProcess, port: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not port_open(self._host, port):
            if not process.alive() or time.monotonic() >= deadline:
                tail = process.log_tail()
                code = self.stop()
                why = (
                    f"exited with {describe_exit(code)}" if code is not None else f"no listener within {timeout_s:g} s"
                )
                raise EngineError(
                    f"{self._engine_id} {self._name} did not come up on {self._host}:{port} ({why})\n"
                    f"command: {' '.join(redact_argv(process.argv))}\nlast log lines:\n{tail}"
                )
            time.sleep(0.1)

    def stop(self) -> int | None:
        """Kill the process group (SIGTERM, then SIGKILL after the grace period) and store the log."""
        if self._process is None:
            return None
        code = self._process.stop(grace_s=3.0)
        self.sync_log()
        self._process = None
        return code
