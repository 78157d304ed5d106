"""How hard each sweep step pushes: concurrency steps, their length, and the warm-up."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from raybench.config.base import StrictModel

__all__ = ["LoadSpec"]


class LoadSpec(StrictModel):
    """A closed-loop concurrency sweep over explicit `steps`, each lasting `duration_s` or `requests`."""

    mode: Literal["concurrency"] = "concurrency"
    steps: list[int] = Field(min_length=1)
    duration_s: float | None = Field(default=None, gt=0)
    requests: int | None = Field(default=None, gt=0)
    warmup_requests: int = Field(default=0, ge=0)
    request_timeout_s: float = Field(default=300.0, gt=0)

    @model_validator(mode="after")
    def _check(self) -> LoadSpec:
        bad = [s for s in self.steps if s < 1]
        if bad:
            raise ValueError(f"every step is a concurrency >= 1; remove or fix {bad}")
        if len(set(self.steps)) != len(self.steps):
            raise ValueError("steps repeat a value; list each concurrency once, e.g. [1, 4, 8, 16]")
        if (self.duration_s is None) == (self.requests is None):
            raise ValueError("give exactly one of `duration_s` (seconds per step) or `requests` (per step)")
        return self
