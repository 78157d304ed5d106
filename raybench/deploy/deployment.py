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

__all__ = ["EngineDeployment"]


class EngineDeployment:
    """The replicas of one engine under test; `start()` returns their base URLs once all are ready."""

    def __init__(self, adapter: EngineAdapter, store_uri: str) -> None:
        self.adapter = adapter
        self._store_uri = store_uri
        self._actors: list[Any] = []
        self.replicas: list[dict[str, Any]] = []

    def start(self) -> list[str]:
        if not self.adapter.managed:
            return self._check_external()
        options: dict[str, Any] = {"num_cpus": self.adapter.num_cpus, "num_gpus": self.adapter.num_gpus}
        self._actors = [
            EngineReplicaActor.options(**options).remote(self.adapter, i, self._store_uri)  # type: ignore[attr-defined]
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
            state = asyncio.run(check_ready(url, self.adapter.served_model, self.adapter.health_path))
            if not state.ready:
                raise EngineError(
                    f"{self.adapter.engine_id}: endpoint {url} is not ready: {state.reason}. "
                    "Start the server, or fix base_url / model.name in the job spec."
                )
        self.replicas = [{"base_url": u, "external": True} for u in urls]
        return urls

    def alive(self) -> bool:
        """False when any launched replica's server has exited."""
        if not self._actors:
            return True
        return all(ray.get([a.alive.remote() for a in self._actors]))

    def teardown(self) -> None:
        """Stop every replica (process groups killed, logs stored) and release the actors."""
        for actor in self._actors:
            with contextlib.suppress(ray.exceptions.RayError):
                ray.get(actor.stop.remote(), timeout=60)
            with contextlib.suppress(ray.exceptions.RayError):
                ray.kill(actor)
        self._actors = []
