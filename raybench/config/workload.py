"""What is sent: the workload spec (synthetic ISL/OSL distributions with a seed)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from raybench.config.base import StrictModel

__all__ = ["LengthSpec", "SyntheticWorkloadSpec", "WorkloadSpec"]


class LengthSpec(StrictModel):
    """A token-length distribution, clipped to [min, max]."""

    distribution: Literal["fixed", "uniform", "normal"] = "fixed"
    mean: int = Field(gt=0, description="mean length in tokens (the value itself when fixed)")
    std: float = Field(default=0.0, ge=0)
    min: int = Field(default=1, ge=1)
    max: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _check(self) -> LengthSpec:
        if self.max is not None and self.max < self.min:
            raise ValueError(f"max ({self.max}) is below min ({self.min}); write max >= min")
        if self.distribution == "uniform" and self.max is None:
            raise ValueError("a uniform distribution needs `min` and `max`")
        if self.distribution == "normal" and self.std == 0:
            raise ValueError("a normal distribution needs `std` > 0 (or use distribution: fixed)")
        return self


class SyntheticWorkloadSpec(StrictModel):
    """Prompts of sampled input length asking for sampled output length, reproducible by `seed`."""

    kind: Literal["synthetic"] = "synthetic"
    isl: LengthSpec
    osl: LengthSpec
    seed: int = Field(default=0, ge=0)
    api: Literal["completions", "chat"] = "completions"


WorkloadSpec = SyntheticWorkloadSpec
