"""Pydantic specs of a job and its sections, and the loader that reports every mistake at once."""

from raybench.config.engine import ENGINE_KINDS, EndpointEngineSpec, EngineSpec, SimulatedEngineSpec
from raybench.config.job import FleetSpec, JobSpec, ModelSpec, OutputSpec
from raybench.config.load import LoadSpec
from raybench.config.loader import apply_overrides, load_job, parse_job, spec_sha256
from raybench.config.slo import SloSpec, ValiditySpec
from raybench.config.workload import LengthSpec, SyntheticWorkloadSpec, WorkloadSpec

__all__ = [
    "ENGINE_KINDS",
    "EndpointEngineSpec",
    "EngineSpec",
    "FleetSpec",
    "JobSpec",
    "LengthSpec",
    "LoadSpec",
    "ModelSpec",
    "OutputSpec",
    "SimulatedEngineSpec",
    "SloSpec",
    "SyntheticWorkloadSpec",
    "ValiditySpec",
    "WorkloadSpec",
    "apply_overrides",
    "load_job",
    "parse_job",
    "spec_sha256",
]
