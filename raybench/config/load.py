"""How hard each sweep step pushes: concurrency or request-rate steps, arrivals, their length, the warm-up."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from raybench.config.base import StrictModel

__all__ = ["LoadSpec", "StepRange"]


class StepRange(StrictModel):
    """Steps as a range instead of a list: `linear` adds `step`, `geometric` multiplies by `factor`.

    In `mode: concurrency` the values are rounded to whole concurrencies (repeats dropped).
    """

    scale: Literal["linear", "geometric"] = "geometric"
    start: float = Field(gt=0)
    stop: float = Field(gt=0)
    step: float | None = Field(default=None, gt=0, description="linear: the increment")
    factor: float | None = Field(default=None, gt=1, description="geometric: the ratio, e.g. 2")

    @model_validator(mode="after")
    def _check(self) -> StepRange:
        if self.stop < self.start:
            raise ValueError(f"stop {self.stop:g} is below start {self.start:g}; swap them")
        if self.scale == "linear" and (self.step is None or self.factor is not None):
            raise ValueError("a linear range takes `step` (the increment), not `factor`; e.g. step: 8")
        if self.scale == "geometric" and (self.factor is None or self.step is not None):
            raise ValueError("a geometric range takes `factor` (the ratio), not `step`; e.g. factor: 2")
        return self

    def next_value(self, value: float) -> float:
        """The value after `value` in this progression (also past `stop`, for extend_past_knee)."""
        return value + self.step if self.step is not None else value * (self.factor or 2.0)

    def values(self) -> list[float]:
        out = [self.start]
        while (nxt := self.next_value(out[-1])) <= self.stop * (1 + 1e-9):
            out.append(nxt)
        return out


def _levels(values: list[float], whole: bool) -> list[float] | list[int]:
    if not whole:
        return [round(v, 9) for v in values]
    return sorted({max(1, round(v)) for v in values})


class LoadSpec(StrictModel):
    """A sweep over explicit steps, each lasting `duration_s` or `requests`.

    `mode: concurrency` (closed loop): `steps` are concurrencies. `mode: rate` (open loop): `rates_per_s`
    are request rates, arrivals `constant`, `poisson` or `gamma` (shape `burstiness`) from `seed`,
    optionally capped at `max_concurrency` requests in flight (queued arrivals keep their schedule instant).
    """

    mode: Literal["concurrency", "rate"] = "concurrency"
    step_range: StepRange | None = None
    steps: list[int] = Field(default_factory=list)
    rates_per_s: list[float] = Field(default_factory=list)
    arrival: Literal["constant", "poisson", "gamma"] = "poisson"
    burstiness: float = Field(default=1.0, gt=0)
    seed: int = Field(default=0, ge=0)
    max_concurrency: int | None = Field(default=None, ge=1)
    duration_s: float | None = Field(default=None, gt=0)
    requests: int | None = Field(default=None, gt=0)
    warmup_requests: int = Field(default=0, ge=0)
    warmup_s: float | None = Field(default=None, gt=0, description="warm-up by time instead of requests")
    request_timeout_s: float = Field(default=300.0, gt=0)
    extend_past_knee: bool = False
    max_steps: int = Field(default=12, ge=1, description="most steps a sweep runs, extension included")

    @model_validator(mode="before")
    @classmethod
    def _expand_range(cls, data: Any) -> Any:
        """`step_range` fills `steps` (or `rates_per_s`); a spec that also lists them must list the same."""
        if not isinstance(data, dict) or not isinstance(data.get("step_range"), dict | StepRange):
            return data
        rng = StepRange.model_validate(data["step_range"])
        key = "rates_per_s" if data.get("mode") == "rate" else "steps"
        values = _levels(rng.values(), whole=key == "steps")
        given = data.get(key)
        if given and [float(v) for v in given] != [float(v) for v in values]:
            raise ValueError(f"give either `step_range` or `{key}`, not both (the range gives {values})")
        return {**data, key: values}

    @model_validator(mode="after")
    def _check(self) -> LoadSpec:
        if self.warmup_requests and self.warmup_s is not None:
            raise ValueError("give one warm-up: `warmup_requests` (a count) or `warmup_s` (seconds), not both")
        if self.max_steps < len(self.levels()):
            raise ValueError(f"max_steps {self.max_steps} is below the {len(self.levels())} steps listed; raise it")
        if self.mode == "concurrency":
            self._check_concurrency()
        else:
            self._check_rate()
        if (self.duration_s is None) == (self.requests is None):
            raise ValueError("give exactly one of `duration_s` (seconds per step) or `requests` (per step)")
        return self

    @field_validator("steps")
    @classmethod
    def _steps_given(cls, steps: list[int], info: ValidationInfo) -> list[int]:
        if info.data.get("mode", "concurrency") == "concurrency" and not steps:
            raise ValueError("must not be empty in mode concurrency: list concurrencies, e.g. [1, 4, 8, 16]")
        return steps

    def _check_concurrency(self) -> None:
        bad = [s for s in self.steps if s < 1]
        if bad:
            raise ValueError(f"every step is a concurrency >= 1; remove or fix {bad}")
        if len(set(self.steps)) != len(self.steps):
            raise ValueError("steps repeat a value; list each concurrency once, e.g. [1, 4, 8, 16]")
        if self.rates_per_s or self.max_concurrency is not None:
            raise ValueError("`rates_per_s` and `max_concurrency` belong to `mode: rate`; remove them or set it")

    def _check_rate(self) -> None:
        if self.steps:
            raise ValueError("mode rate takes `rates_per_s` (requests per second), not `steps`; rename the key")
        if not self.rates_per_s:
            raise ValueError("mode rate needs `rates_per_s`, a list of request rates, e.g. [5, 10, 20]")
        bad = [r for r in self.rates_per_s if not r > 0]
        if bad:
            raise ValueError(f"every rate is > 0 requests per second; remove or fix {bad}")
        if len(set(self.rates_per_s)) != len(self.rates_per_s):
            raise ValueError("rates_per_s repeat a value; list each rate once, e.g. [5, 10, 20]")
        if self.burstiness != 1.0 and self.arrival != "gamma":
            raise ValueError("`burstiness` shapes gamma arrivals only; set `arrival: gamma` or remove it")

    def levels(self) -> list[float]:
        """The listed steps' loads: concurrencies, or rates per second."""
        return [float(s) for s in self.steps] if self.mode == "concurrency" else list(self.rates_per_s)

    def next_level(self, levels: list[float]) -> float:
        """The load of the step after `levels` when extending past the knee: the range's progression,
        else the listed steps' last ratio (x2 after a single step); concurrencies rounded up."""
        last = levels[-1]
        if self.step_range is not None:
            nxt = self.step_range.next_value(last)
        elif len(levels) >= 2 and levels[-2] > 0 and last > levels[-2]:
            nxt = last * last / levels[-2]
        else:
            nxt = last * 2
        return float(max(math.ceil(nxt), int(last) + 1)) if self.mode == "concurrency" else round(nxt, 9)

    def connections(self) -> int:
        """Keep-alive connections worth opening before the sweep: the most requests expected in flight."""
        if self.mode == "concurrency":
            return max(self.steps)
        return self.max_concurrency or min(max(int(max(self.rates_per_s)), 1), 256)
