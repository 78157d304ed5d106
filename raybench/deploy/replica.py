"""EngineReplicaActor: the Ray actor that launches, watches and tears down one engine server."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import ray

from raybench.deploy.process import ServerProcess, free_port
from raybench.engines.base import EngineAdapter
from raybench.engines.readiness import wait_ready
from raybench.errors import EngineError, StorageError
from raybench.results.store import ResultStore

__all__ = ["EngineReplicaActor"]


@ray.remote
class EngineReplicaActor:
    """One replica of one engine, on the node Ray placed it (with the GPUs Ray assigned)."""

    def __init__(self, adapter: EngineAdapter, replica_index: int, store_uri: str) -> None:
        self._adapter = adapter
        self._name = f"replica-{replica_index}"
        self._store = ResultStore(store_uri)
        self._host: str = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
        self._process: ServerProcess | None = None
        self._logdir = Path(tempfile.mkdtemp(prefix="raybench-engine-"))

    async def start(self) -> dict[str, Any]:
        """Launch the server and wait until it is ready; returns its base URL and identity."""
        port = free_port(self._host)
        plan = self._adapter.launch_plan(self._host, port)
        self._process = ServerProcess(plan, self._logdir / f"{self._name}.log")
        base_url = f"http://{self._host}:{port}"
        process = self._process
        state = await wait_ready(
            base_url,
            self._adapter.served_model,
            plan.ready_timeout_s,
            self._adapter.health_path,
            alive=process.alive,
        )
        if not state.ready:
            tail = process.log_tail()
            self.stop()
            raise EngineError(
                f"{self._adapter.engine_id} {self._name} did not become ready: {state.reason}\n"
                f"command: {' '.join(plan.argv)}\nlast log lines:\n{tail}"
            )
        return {
            "base_url": base_url,
            "pid": process.pid,
            "node_ip": self._host,
            "node_id": ray.get_runtime_context().get_node_id(),
            "argv": plan.argv,
        }

    def alive(self) -> bool:
        return self._process is not None and self._process.alive()

    def stop(self) -> int | None:
        """Kill the server's process group and store its log; returns the exit code."""
        if self._process is None:
            return None
        code = self._process.stop()
        try:
            data = self._process.log_path.read_bytes()
            self._store.write_bytes(f"engines/{self._adapter.engine_id}/logs/{self._name}.log", data)
        except (OSError, StorageError):
            pass  # the run goes on without this log; the summary still names the replica
        self._process = None
        return code
