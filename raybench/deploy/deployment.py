"""EngineDeployment: places an engine's replicas on the cluster, waits for them, tears them down."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import ray

from raybench.deploy.replica import EngineReplicaActor
from raybench.engines.base import EngineAdapter
from raybench.engines.readiness import check_ready
from raybench.errors import EngineError
from raybench.results.store import ResultStore

__all__ = ["EngineDeployment"]


class EngineDeployment:
    """The replicas of one engine under test; `start()` returns their base URLs once all are ready."""

    def __init__(self, adapter: EngineAdapter, store: ResultStore | str) -> None:
        self.adapter = adapter
        self._store = store if isinstance(store, ResultStore) else ResultStore(store)
        self._actors: list[Any] = []
        self.replicas: list[dict[str, Any]] = []

    def start(self) -> list[str]:
        if not self.adapter.managed:
            return self._check_external()
        options: dict[str, Any] = {"num_cpus": self.adapter.num_cpus, "num_gpus": self.adapter.num_gpus}
        self._actors = [
            EngineReplicaActor.options(**options).remote(self.adapter, i, self._store)  # type: ignore[attr-defined]
            for i in range(self.adapter.replicas)
        ]
        try:
            self.replicas = ray.get([actor.start.remote() for actor in self._actors])
        except ray.exceptions.RayTaskError as exc:
            self.teardown()
            cause = exc.cause if isinstance(exc.cause, EngineError) else exc
            raise EngineError(str(cause)) from None
        return [r["base_url"] for r in self.replicas]

    def _check_external(self) -> list[str]:
        urls = self.adapter.external_urls()
        for url in urls:
            rule = self.adapter.readiness()
            state = asyncio.run(
                check_ready(url, self.adapter.served_model, rule.health_path, extra_paths=rule.extra_paths)
            )
            if not state.ready:
                raise EngineError(
                    f"{self.adapter.engine_id}: endpoint {url} is not ready: {state.reason}. "
                    "Start the server, or fix base_url / model.name in the job spec."
                )
        self.replicas = [{"replica": f"external-{i}", "base_url": u, "external": True} for i, u in enumerate(urls)]
        return urls

    def alive(self) -> bool:
        """False when any launched replica's server has exited."""
        if not self._actors:
            return True
        try:
            return all(ray.get([a.alive.remote() for a in self._actors], timeout=30))
        except ray.exceptions.RayError:
            return False  # the replica actor itself is gone

    def failure_reason(self) -> str:
        """Why replicas are gone: each dead one's exit status and last log lines."""
        reasons = []
        for index, actor in enumerate(self._actors):
            try:
                info = ray.get(actor.exit_info.remote(), timeout=30)
            except ray.exceptions.RayError as exc:
                reasons.append(f"replica-{index}: its actor died ({type(exc).__name__})")
                continue
            if info:
                tail = "\n".join(info["log_tail"].splitlines()[-5:])
                reasons.append(f"{info['replica']} exited with {info['exit']}; last log lines:\n{tail}")
        return "\n".join(reasons) or "a replica stopped answering"

    def sync_logs(self) -> None:
        """Copy every replica's log so far to the result store."""
        with contextlib.suppress(ray.exceptions.RayError):
            ray.get([a.sync_log.remote() for a in self._actors], timeout=60)

    def pgids(self) -> list[int | None]:
        """Each replica's server process group (for orphan checks)."""
        return list(ray.get([a.pgid.remote() for a in self._actors]))

    def teardown(self) -> None:
        """Stop every replica (process groups killed, logs stored) and release the actors."""
        for actor in self._actors:
            with contextlib.suppress(ray.exceptions.RayError):
                ray.get(actor.stop.remote(), timeout=60)
            with contextlib.suppress(ray.exceptions.RayError):
                ray.kill(actor)
        self._actors = []
