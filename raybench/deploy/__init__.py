"""Ray side of engines: replica actors, process supervision, deployment of an engine's replicas."""

from raybench.deploy.deployment import EngineDeployment
from raybench.deploy.process import ServerProcess, free_port

__all__ = ["EngineDeployment", "ServerProcess", "free_port"]
