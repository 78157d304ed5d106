"""The job spec: one YAML file that pins every constant of a comparison and names the engines."""

from __future__ import annotations

from pydantic import Field, model_validator

from raybench.config.base import StrictModel
from raybench.config.engine import EngineSpec
from raybench.config.load import LoadSpec
from raybench.config.slo import SloSpec, ValiditySpec
from raybench.config.workload import WorkloadSpec

__all__ = ["FleetSpec", "JobSpec", "ModelSpec", "OutputSpec"]


class ModelSpec(StrictModel):
    """The model every engine serves (a constant of the comparison)."""

    name: str = Field(min_length=1)
    precision: str = Field(default="bf16", min_length=1)
    tokenizer: str | None = Field(default=None, description="local tokenizer path; never downloaded")


class FleetSpec(StrictModel):
    """The load generators: how many actors, and the CPUs each reserves."""

    generators: int = Field(default=1, ge=1)
    num_cpus_per_generator: float = Field(default=1.0, gt=0)


class OutputSpec(StrictModel):
    """Where results go: a local path, file://, s3:// or gs:// URI."""

    uri: str = Field(default="./results", min_length=1)


class JobSpec(StrictModel):
    """A benchmark job: the constants (model, hardware, workload, load, SLO) and the engines varied."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    model: ModelSpec
    hardware: str = Field(default="unspecified", min_length=1)
    engines: list[EngineSpec] = Field(min_length=1)
    workload: WorkloadSpec
    load: LoadSpec
    slo: SloSpec
    validity: ValiditySpec = ValiditySpec()
    fleet: FleetSpec = FleetSpec()
    output: OutputSpec = OutputSpec()

    @model_validator(mode="after")
    def _unique_engine_ids(self) -> JobSpec:
        ids = self.engine_ids()
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"engine ids repeat ({', '.join(dupes)}); give each engine a distinct `id`")
        return self

    def engine_ids(self) -> list[str]:
        """Each engine's id: its `id`, else `<kind>-<position>`."""
        return [e.id or f"{e.kind}-{i}" for i, e in enumerate(self.engines)]
