"""The job spec: one YAML file that pins every constant of a comparison and names the engines."""

from __future__ import annotations

import math
from typing import Literal

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
    """The load generators: how many actors, where they go, the CPUs each reserves, step re-runs.

    `generators` is the count; with `streams_per_generator` (a per-generator budget of requests in
    flight) the count grows to what the largest step needs: max(generators, ceil(peak / budget)).
    `placement: loadgen` pins generators to nodes offering the `loadgen` custom resource (each takes
    `loadgen_per_generator` of it), keeping them off the engines' CPUs; `spread` uses Ray's SPREAD.
    """

    generators: int = Field(default=1, ge=1)
    streams_per_generator: int | None = Field(default=None, ge=1, description="in-flight budget per generator")
    num_cpus_per_generator: float = Field(default=1.0, gt=0)
    placement: Literal["spread", "loadgen"] = "spread"
    loadgen_per_generator: float = Field(default=1.0, gt=0)
    step_reruns: int = Field(default=1, ge=0, description="re-runs of a step whose generator died")
    start_timeout_s: float = Field(default=60.0, gt=0, description="how long generators and nodes may take to answer")
    client: Literal["auto", "lean", "aiohttp"] = Field(
        default="auto",
        description="HTTP client of the generators: auto (the lean client for http://, aiohttp for https://), "
        "lean (http:// only), aiohttp (every URL; the baseline of the fidelity A/B)",
    )

    def size(self, peak_streams: int) -> int:
        """Generators for a sweep whose largest step keeps `peak_streams` requests in flight."""
        if self.streams_per_generator is None:
            return self.generators
        return max(self.generators, math.ceil(peak_streams / self.streams_per_generator))


class OutputSpec(StrictModel):
    """Where results go: a local path, file://, s3:// or gs:// URI. Credentials come from the standard
    AWS / Google environment of each node, never from the spec."""

    uri: str = Field(default="./results", min_length=1)
    endpoint_url: str | None = Field(
        default=None, description="S3-compatible endpoint, e.g. http://127.0.0.1:9000 (else AWS_ENDPOINT_URL)"
    )
    region: str | None = Field(default=None, description="S3 region (else AWS_REGION)")
    max_outage_s: float = Field(
        default=16.0,
        gt=0,
        le=3600,
        description="how long storage may keep failing (throttling, 5xx, no connection) while writes are "
        "retried and records held in memory; past it the run stops, naming the steps that are safe to resume from",
    )


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

    @model_validator(mode="after")
    def _model_precision_served(self) -> JobSpec:
        from raybench.engines.precision import check_precision

        for index, engine in enumerate(self.engines):
            if getattr(engine, "precision", "set") is None:  # launched engines serve model.precision
                reason = check_precision(engine.kind, self.model.precision)
                if reason:
                    raise ValueError(f"engines.{index} ({engine.kind}) cannot serve model.precision "
                                     f"{self.model.precision!r}: {reason}")  # fmt: skip
        return self

    def engine_ids(self) -> list[str]:
        """Each engine's id: its `id`, else `<kind>-<position>`."""
        return [e.id or f"{e.kind}-{i}" for i, e in enumerate(self.engines)]
