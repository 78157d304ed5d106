"""The engine plugin contract: an adapter per kind, registered by name, and how it is launched."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel

from raybench.config.job import ModelSpec
from raybench.engines.metrics import DIALECTS, MetricMap
from raybench.engines.readiness import ReadinessRule
from raybench.errors import ConfigError, EngineError, Problem
from raybench.loadgen.endpoint import Endpoint

__all__ = ["EngineAdapter", "LaunchPlan", "NodeRole", "adapter_for", "known_kinds", "register"]


@dataclass(frozen=True)
class LaunchPlan:
    """A server process to start: argv, extra environment, and where it will listen."""

    argv: list[str]
    port: int
    env: dict[str, str] = field(default_factory=dict)
    ready_timeout_s: float = 600.0
    files: dict[str, str] = field(default_factory=dict)  # name -> text, written to WORKDIR before launch

    WORKDIR = "{workdir}"  # in argv, replaced by the replica's working folder


@dataclass(frozen=True)
class NodeRole:
    """One node of a replica that spans `nnodes` nodes: its rank (0 serves HTTP) and rank 0's rendezvous."""

    nnodes: int
    rank: int
    master_addr: str
    master_port: int


class EngineAdapter(ABC):
    """What raybench knows of one engine kind: flags, readiness, identity. No Ray in here."""

    kind: ClassVar[str]
    managed: ClassVar[bool] = True

    def __init__(self, spec: Any, model: ModelSpec, engine_id: str) -> None:
        self.spec = spec
        self.model = model
        self.engine_id = engine_id

    @property
    def replicas(self) -> int:
        return int(getattr(self.spec, "replicas", 1))

    @property
    def num_cpus(self) -> float:
        return float(getattr(self.spec, "num_cpus", 1.0))

    @property
    def num_gpus(self) -> float:
        return 0.0

    @property
    def nodes(self) -> int | None:
        """Nodes one replica spans as the spec asks; None: 1, or what tp x pp needs on the cluster."""
        value = getattr(self.spec, "nodes", None)
        return int(value) if value is not None else None

    @property
    def multinode_refusal(self) -> str:
        """Why one replica of this kind cannot span nodes ("" when it can)."""
        return str(getattr(type(self.spec), "multinode", "this engine kind runs on one node"))

    def node_launch_plan(self, host: str, port: int, role: NodeRole) -> LaunchPlan:
        """The command of node `role.rank` of a multi-node replica (rank 0 listens on host:port)."""
        raise EngineError(f"{self.engine_id}: {self.kind} cannot span nodes: {self.multinode_refusal}")

    @property
    def preferred_port(self) -> int | None:
        """A fixed port from the spec, else None (a free port is chosen)."""
        return getattr(self.spec, "port", None)

    @property
    def health_path(self) -> str | None:
        """The liveness path probed before /v1/models (None: the server has none)."""
        return "/health"

    def readiness(self) -> ReadinessRule:
        """How to tell the server is ready (its own health semantics, then /v1/models)."""
        return ReadinessRule(self.health_path)

    def metric_map(self) -> MetricMap:
        """The server's Prometheus names mapped to raybench's (default: vLLM's, which the simulated engine exposes)."""
        return DIALECTS["vllm"]

    def version_probe(self) -> tuple[str, str] | None:
        """(HTTP path, JSON key) that reports the running server's version, when it has one."""
        return None

    @property
    def balance(self) -> str:
        """How the load generators spread requests over replicas: round_robin or least_outstanding."""
        return str(getattr(self.spec, "balance", "round_robin"))

    @property
    def served_model(self) -> str:
        """The model id the server lists in /v1/models and expects in requests."""
        return self.model.name

    @abstractmethod
    def launch_plan(self, host: str, port: int) -> LaunchPlan:
        """The exact command that starts one replica listening on host:port."""

    def external_urls(self) -> list[str]:
        """Base URLs of servers raybench does not launch (unmanaged kinds only)."""
        return []

    @abstractmethod
    def motor(self) -> str:
        """Engine name as the article's `motor` key."""

    @abstractmethod
    def motor_version(self) -> str:
        """Engine version as the article's `motor_version` key."""

    def engine_args(self) -> dict[str, Any]:
        """The engine configuration recorded in provenance (never secrets)."""
        return dict(self.spec.model_dump(mode="json")) if isinstance(self.spec, BaseModel) else {}

    def endpoint(self, base_urls: list[str], api: str) -> Endpoint:
        """The loadgen Endpoint for the ready replicas."""
        return Endpoint(
            base_urls=tuple(base_urls),
            model=self.served_model,
            api="chat" if api == "chat" else "completions",
            balance="least_outstanding" if self.balance == "least_outstanding" else "round_robin",
        )


A = TypeVar("A", bound=type[EngineAdapter])
_REGISTRY: dict[str, type[EngineAdapter]] = {}


def register(kind: str) -> Callable[[A], A]:
    """Class decorator: make an adapter available under `kind`."""

    def wrap(cls: A) -> A:
        cls.kind = kind
        _REGISTRY[kind] = cls
        return cls

    return wrap


def known_kinds() -> list[str]:
    return sorted(_REGISTRY)


def adapter_for(spec: Any, model: ModelSpec, engine_id: str) -> EngineAdapter:
    """The adapter for `spec.kind`; an unknown kind fails with the list of known ones."""
    kind = str(getattr(spec, "kind", ""))
    cls = _REGISTRY.get(kind)
    if cls is None:
        raise ConfigError(
            "engines", [Problem("kind", f"unknown engine kind {kind!r}; known: {', '.join(known_kinds())}")]
        )
    return cls(spec, model, engine_id)
