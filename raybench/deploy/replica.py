"""EngineReplicaActor: the Ray actor that launches, watches and tears down one engine server."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import ray

from raybench.deploy.identity import env_subset, gpu_inventory, server_version
from raybench.deploy.node import node_ip
from raybench.deploy.process import ServerProcess, describe_exit, free_port, redact_argv
from raybench.deploy.supervised import SupervisedProcess
from raybench.engines.base import EngineAdapter, LaunchPlan, NodeRole
from raybench.engines.readiness import wait_ready
from raybench.errors import EngineError
from raybench.results.store import ResultStore

__all__ = ["EngineReplicaActor"]


@ray.remote
class EngineReplicaActor(SupervisedProcess):
    """One replica of one engine, on the node Ray placed it (with the GPUs Ray assigned: Ray sets
    CUDA_VISIBLE_DEVICES in this actor's environment, which the server process inherits).

    A replica spanning nodes has one such actor per node, each in its own bundle of the replica's
    placement group: node 0 (the head) serves HTTP and is waited on for readiness (`start`); every
    other node only launches its engine process (`launch_node`)."""

    def __init__(self, adapter: EngineAdapter, replica_index: int, store: ResultStore, node_rank: int = 0) -> None:
        self._adapter = adapter
        self._name = f"replica-{replica_index}" + (f"-node-{node_rank}" if node_rank else "")
        self._store = store
        self._log_key = f"engines/{adapter.engine_id}/logs/{self._name}.log"
        self._host = node_ip()
        self._process: ServerProcess | None = None
        self._last_exit: int | None = None
        self._logdir = Path(tempfile.mkdtemp(prefix="raybench-engine-"))

    def rendezvous(self) -> tuple[str, int]:
        """This node's address and a free port on it, where a multi-node engine's rank 0 rendezvouses."""
        return self._host, free_port(self._host)

    def launch_node(self, role: NodeRole) -> dict[str, Any]:
        """Start node `role.rank` (> 0) of a multi-node replica; it serves no HTTP, so no readiness here."""
        plan = self._adapter.node_launch_plan(self._host, free_port(self._host), role)
        self._process = ServerProcess(plan, self._logdir / f"{self._name}.log")
        return {**self._identity(plan, self._process), "node_rank": role.rank}

    def _identity(self, plan: LaunchPlan, process: ServerProcess) -> dict[str, Any]:
        return {
            "replica": self._name,
            "pid": process.pid,
            "node_ip": self._host,
            "node_id": ray.get_runtime_context().get_node_id(),
            "argv": redact_argv(process.argv),
            "env": env_subset(plan.env),
            "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
        }

    async def start(self, role: NodeRole | None = None) -> dict[str, Any]:
        """Launch the server (node 0 of `role` when it spans nodes) and wait until it is ready; returns its
        base URL and identity."""
        port = self._adapter.preferred_port or free_port(self._host)
        if role is None:
            plan = self._adapter.launch_plan(self._host, port)
        else:
            plan = self._adapter.node_launch_plan(self._host, port, role)
        self._process = process = ServerProcess(plan, self._logdir / f"{self._name}.log")
        base_url = f"http://{self._host}:{port}"
        rule = self._adapter.readiness()
        state = await wait_ready(
            base_url, self._adapter.served_model, plan.ready_timeout_s, rule.health_path, process.alive,
            extra_paths=rule.extra_paths,
        )  # fmt: skip
        if not state.ready:
            tail = process.log_tail()
            code = self.stop()
            reason = f"{state.reason}; exited with {describe_exit(code)}" if code is not None else state.reason
            raise EngineError(
                f"{self._adapter.engine_id} {self._name} did not become ready ({rule.describe()}): {reason}\n"
                f"command: {' '.join(redact_argv(process.argv))}\nlast log lines:\n{tail}"
            )
        version = await server_version(base_url, self._adapter.version_probe()) or self._adapter.motor_version()
        return {
            **self._identity(plan, process),
            "base_url": base_url,
            "gpus": gpu_inventory(),
            "engine_version": version,
            "readiness": rule.describe(),
        }

    def stop(self) -> int | None:
        """Kill the server's process group and store its log; returns the exit code."""
        if self._process is None:
            return self._last_exit
        code = self._last_exit = self._process.stop()
        self.sync_log()
        self._process = None
        return code
