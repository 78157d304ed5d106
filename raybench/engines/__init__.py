"""Engine adapters, one file per kind, registered by name; importing this registers them all."""

from raybench.engines import endpoint as _endpoint
from raybench.engines import simulated as _simulated
from raybench.engines.base import EngineAdapter, LaunchPlan, adapter_for, known_kinds, register

del _endpoint, _simulated

__all__ = ["EngineAdapter", "LaunchPlan", "adapter_for", "known_kinds", "register"]
