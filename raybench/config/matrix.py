"""The matrix spec: one base job expanded over models, precisions, engines and named configs."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from raybench.config.base import StrictModel
from raybench.config.job import ModelSpec, OutputSpec

__all__ = ["CellMatch", "CellOverride", "MatrixSpec"]


class CellMatch(StrictModel):
    """Selects cells: every given field must equal the cell's (engine id, model name, precision, config)."""

    engine: str | None = None
    model: str | None = None
    precision: str | None = None
    config: str | None = None

    def matches(self, cell: dict[str, str]) -> bool:
        return all(value is None or cell[key] == value for key, value in self.model_dump().items())


class CellOverride(StrictModel):
    """Extra `path: value` settings for the cells that `match` selects (applied after the config's)."""

    match: CellMatch
    set: dict[str, Any] = Field(min_length=1)


def _default_configs() -> dict[str, dict[str, Any]]:
    return {"default": {}}


class MatrixSpec(StrictModel):
    """`base` (a job file relative to the matrix file, or an inline job) varied along each axis."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    base: str | dict[str, Any]
    models: list[ModelSpec] = Field(min_length=1)
    engines: list[dict[str, Any]] = Field(min_length=1, description="engine specs, each with a distinct `id`")
    configs: dict[str, dict[str, Any]] = Field(default_factory=_default_configs)
    exclude: list[CellMatch] = Field(default_factory=list)
    overrides: list[CellOverride] = Field(default_factory=list)
    output: OutputSpec = OutputSpec()

    @model_validator(mode="after")
    def _check(self) -> MatrixSpec:
        ids = [e.get("id") for e in self.engines]
        if any(not isinstance(i, str) or not i for i in ids) or len(set(ids)) != len(ids):
            raise ValueError("give every engine of a matrix a distinct `id` (cells are named by it)")
        for name in self.configs:
            if not name.replace("-", "").replace("_", "").isalnum():
                raise ValueError(f"config name {name!r}: use letters, digits, '-' or '_'")
        return self
