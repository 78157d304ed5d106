"""The engine plugin contract: an adapter per kind, registered by name, and how it is launched."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel

from raybench.config.job import ModelSpec
from raybench.errors import ConfigError, Problem
from raybench.loadgen.endpoint import Endpoint

__all__ = ["EngineAdapter", "LaunchPlan", "adapter_for", "known_kinds", "register"]


@dataclass(frozen=True)
class LaunchPlan:
    """A server process to start: argv, extra environment, and where it will listen."""

    argv: list[str]
    port: int
    env: dict[str, str] = field(default_factory=dict)
    ready_timeout_s: float = 600.0


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
    def health_path(self) -> str | None:
        """The liveness path probed before /v1/models (None: the server has none)."""
        return "/health"

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
            base_urls=tuple(base_urls), model=self.served_model, api="chat" if api == "chat" else "completions"
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
