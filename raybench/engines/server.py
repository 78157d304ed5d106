"""What every launched engine server adapter shares: GPUs, precision, the command line, identity."""

from __future__ import annotations

import importlib.metadata
from abc import abstractmethod
from typing import Any, ClassVar

from raybench.config.engine import ServerEngineSpec
from raybench.engines.base import EngineAdapter, LaunchPlan, NodeRole
from raybench.engines.metrics import DIALECTS, MetricMap
from raybench.engines.precision import normalize_precision
from raybench.errors import EngineError

__all__ = ["ServerEngineAdapter", "flag", "switch"]


def flag(name: str, value: Any) -> list[str]:
    """`[name, value]`, or nothing when the value is unset (the engine keeps its default)."""
    return [] if value is None else [name, str(value)]


def switch(on: str | None, off: str | None, value: bool | None) -> list[str]:
    """The flag that turns a feature on or off; nothing when unset or the engine has no such flag."""
    chosen = on if value is True else off if value is False else None
    return [chosen] if chosen else []


class ServerEngineAdapter(EngineAdapter):
    """A server raybench launches per replica: `entrypoint() + flags() + extra_args`, on tp x pp GPUs."""

    spec: ServerEngineSpec
    motor_name: ClassVar[str]
    package: ClassVar[str | None] = None  # the Python distribution whose version identifies the engine
    dialect: ClassVar[str] = "none"  # its Prometheus names (engines/metrics.py)

    @property
    def num_gpus(self) -> float:
        if self.spec.num_gpus is not None:
            return float(self.spec.num_gpus)
        return float(self.spec.tensor_parallel_size * self.spec.pipeline_parallel_size)

    @property
    def served_model(self) -> str:
        return self.spec.served_model_name or self.model.name

    @property
    def precision(self) -> str:
        """The precision served: the engine's own setting, else the model's (canonical name)."""
        return normalize_precision(self.spec.precision or self.model.precision)

    @abstractmethod
    def entrypoint(self) -> list[str]:
        """The engine's own command (replaced by `launcher` when the spec sets one)."""

    @abstractmethod
    def flags(self, host: str, port: int) -> list[str]:
        """The engine's flags for this spec, listening on host:port."""

    def files(self) -> dict[str, str]:
        """Configuration files the command line refers to under LaunchPlan.WORKDIR."""
        return {}

    def node_flags(self, role: NodeRole) -> list[str]:
        """The engine's own flags that make this process node `role.rank` of `role.nnodes`."""
        raise EngineError(f"{self.engine_id}: {self.kind} cannot span nodes: {self.multinode_refusal}")

    def launch_plan(self, host: str, port: int) -> LaunchPlan:
        return self._plan(host, port, [])

    def node_launch_plan(self, host: str, port: int, role: NodeRole) -> LaunchPlan:
        return self._plan(host, port, self.node_flags(role))

    def _plan(self, host: str, port: int, node_flags: list[str]) -> LaunchPlan:
        command = list(self.spec.launcher) if self.spec.launcher else self.entrypoint()
        return LaunchPlan(
            argv=[*command, *self.flags(host, port), *node_flags, *self.spec.extra_args],
            port=port,
            env=dict(self.spec.env),
            ready_timeout_s=self.spec.ready_timeout_s,
            files=self.files(),
        )

    def metric_map(self) -> MetricMap:
        return DIALECTS[self.dialect]

    def motor(self) -> str:
        return self.motor_name

    def motor_version(self) -> str:
        """The installed package's version where this runs; the replica reports the server's own when it can."""
        if self.package is None:
            return "unknown"
        try:
            return importlib.metadata.version(self.package)
        except importlib.metadata.PackageNotFoundError:
            return "unknown"

    def engine_args(self) -> dict[str, Any]:
        return {**self.spec.model_dump(mode="json"), "resolved_precision": self.precision}
