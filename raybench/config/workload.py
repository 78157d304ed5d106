"""What is sent: workload specs by `kind` (synthetic, sharegpt, shared_prefix, multi_turn, trace), seeds, filters."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from raybench.config.base import StrictModel

__all__ = [
    "WORKLOAD_KINDS",
    "WORKLOAD_SPECS",
    "LengthSpec",
    "MultiTurnWorkloadSpec",
    "ShareGPTWorkloadSpec",
    "SharedPrefixWorkloadSpec",
    "SyntheticWorkloadSpec",
    "ThinkTimeSpec",
    "TraceWorkloadSpec",
    "WorkloadSpec",
]


class LengthSpec(StrictModel):
    """A token-length distribution, clipped to [min, max]."""

    distribution: Literal["fixed", "uniform", "normal", "lognormal", "empirical"] = "fixed"
    mean: int | None = Field(default=None, gt=0, description="mean length in tokens (the value itself when fixed)")
    std: float = Field(default=0.0, ge=0)
    min: int = Field(default=1, ge=1)
    max: int | None = Field(default=None, ge=1)
    values: list[int] | None = Field(default=None, description="empirical: the lengths")
    weights: list[float] | None = Field(default=None, description="empirical: their relative frequencies")

    @model_validator(mode="after")
    def _check(self) -> LengthSpec:
        if self.max is not None and self.max < self.min:
            raise ValueError(f"max ({self.max}) is below min ({self.min}); write max >= min")
        if self.distribution == "empirical":
            return self._check_empirical()
        if self.mean is None and self.distribution != "uniform":
            raise ValueError(f"a {self.distribution} distribution needs `mean` (tokens)")
        if self.distribution == "uniform" and self.max is None:
            raise ValueError("a uniform distribution needs `min` and `max`")
        if self.distribution in ("normal", "lognormal") and self.std == 0:
            raise ValueError(f"a {self.distribution} distribution needs `std` > 0 (or use distribution: fixed)")
        return self

    def _check_empirical(self) -> LengthSpec:
        if not self.values:
            raise ValueError("an empirical distribution needs `values: [lengths...]` (and optional `weights`)")
        if any(v < 1 for v in self.values):
            raise ValueError("empirical `values` are token lengths >= 1")
        if self.weights is not None and (
            len(self.weights) != len(self.values) or any(w < 0 for w in self.weights) or sum(self.weights) <= 0
        ):
            raise ValueError("`weights` needs one non-negative number per value, not all zero")
        return self


class _WorkloadBase(StrictModel):
    seed: int = Field(default=0, ge=0)
    api: Literal["completions", "chat"] = "completions"


class SyntheticWorkloadSpec(_WorkloadBase):
    """Prompts of sampled input length asking for sampled output length, reproducible by `seed`."""

    kind: Literal["synthetic"] = "synthetic"
    isl: LengthSpec
    osl: LengthSpec


class ShareGPTWorkloadSpec(_WorkloadBase):
    """ShareGPT conversations (JSON or JSONL, local path or object-storage URI): first human turn as the
    prompt, the reply's token count as the output length; filtered and sampled by `seed`."""

    kind: Literal["sharegpt"]
    path: str = Field(min_length=1, description="local file, file://, s3:// or gs:// URI")
    min_isl: int = Field(default=4, ge=1)
    max_isl: int = Field(default=1024, ge=1)
    min_osl: int = Field(default=4, ge=1)
    max_osl: int = Field(default=1024, ge=1)
    osl: LengthSpec | None = Field(default=None, description="override the reference output lengths")
    max_prompts: int | None = Field(default=None, ge=1)
    on_malformed: Literal["skip", "fail"] = "skip"
    ray_data_min_rows: int = Field(
        default=20_000, ge=1, description="datasets with at least this many entries are tokenized with Ray Data"
    )

    @model_validator(mode="after")
    def _check(self) -> ShareGPTWorkloadSpec:
        if self.max_isl < self.min_isl or self.max_osl < self.min_osl:
            raise ValueError("each max_* must be >= its min_*")
        return self


class SharedPrefixWorkloadSpec(_WorkloadBase):
    """Groups of requests sharing a prefix (system prompt, few-shot, RAG context) plus a unique suffix."""

    kind: Literal["shared_prefix"]
    groups: int = Field(ge=1, description="distinct prefixes; request i uses prefix i % groups")
    prefix_tokens: int = Field(ge=1)
    suffix_tokens: LengthSpec
    osl: LengthSpec


class ThinkTimeSpec(StrictModel):
    """Seconds a user waits after a reply before sending the next turn: fixed, uniform or exponential."""

    distribution: Literal["fixed", "uniform", "exponential"] = "fixed"
    mean_s: float = Field(default=0.0, ge=0, description="fixed: the wait; exponential: its mean")
    min_s: float = Field(default=0.0, ge=0, description="uniform: the lower bound; every draw is clipped to it")
    max_s: float | None = Field(default=None, ge=0, description="uniform: the upper bound; every draw clipped to it")

    @model_validator(mode="after")
    def _check(self) -> ThinkTimeSpec:
        if self.distribution == "uniform" and self.max_s is None:
            raise ValueError("a uniform think time needs `min_s` and `max_s` (seconds)")
        if self.max_s is not None and self.max_s < self.min_s:
            raise ValueError(f"max_s ({self.max_s:g}) is below min_s ({self.min_s:g}); write max_s >= min_s")
        if self.distribution == "exponential" and self.mean_s <= 0:
            raise ValueError("an exponential think time needs `mean_s` > 0 (or use distribution: fixed)")
        return self


class MultiTurnWorkloadSpec(_WorkloadBase):
    """Sessions of `turns` turns whose history grows: turn k sends the whole conversation so far (earlier
    user messages and deterministic reference replies of the requested length) plus a new user message of
    `user_tokens`, asking for `osl`; the session waits `think_time` after each reply."""

    kind: Literal["multi_turn"]
    turns: LengthSpec = Field(description="turns per session, e.g. {mean: 4} or {distribution: uniform, max: 8}")
    user_tokens: LengthSpec = Field(description="tokens of each turn's new user message")
    osl: LengthSpec = Field(description="tokens asked for per turn (and of the reference reply kept in the history)")
    system_tokens: int = Field(default=0, ge=0, description="a system prompt of this many tokens opens each session")
    think_time: ThinkTimeSpec = ThinkTimeSpec()


class TraceWorkloadSpec(_WorkloadBase):
    """A request trace (JSON Lines: a timestamp, an input length or text, an output length, optional session id),
    replayed open loop in `load.mode: rate` at the trace's own pace, time-scaled to each step's rate."""

    kind: Literal["trace"]
    path: str = Field(min_length=1, description="local file, file://, s3:// or gs:// URI of a JSONL trace")
    timestamp_unit: Literal["s", "ms"] = Field(
        default="s", description="unit of a line's `timestamp` (a `timestamp_ms` key is always milliseconds)"
    )
    max_isl: int | None = Field(default=None, ge=1, description="drop requests with more input tokens")
    max_osl: int | None = Field(default=None, ge=1, description="drop requests asking for more output tokens")
    max_prompts: int | None = Field(default=None, ge=1, description="replay only the first N requests (in time order)")
    on_malformed: Literal["skip", "fail"] = "skip"
    ray_data_min_rows: int = Field(
        default=20_000, ge=1, description="traces with at least this many lines are tokenized in parallel with Ray Data"
    )


def _workload_kind(value: Any) -> str:
    """`kind` may be omitted for a synthetic workload (the first and simplest)."""
    kind = value.get("kind", "synthetic") if isinstance(value, dict) else getattr(value, "kind", "synthetic")
    return str(kind)


WorkloadSpec = Annotated[
    Annotated[SyntheticWorkloadSpec, Tag("synthetic")]
    | Annotated[ShareGPTWorkloadSpec, Tag("sharegpt")]
    | Annotated[SharedPrefixWorkloadSpec, Tag("shared_prefix")]
    | Annotated[MultiTurnWorkloadSpec, Tag("multi_turn")]
    | Annotated[TraceWorkloadSpec, Tag("trace")],
    Discriminator(_workload_kind, custom_error_type="workload_kind", custom_error_message="unknown workload kind"),
]
WORKLOAD_SPECS: dict[str, type[StrictModel]] = {
    "synthetic": SyntheticWorkloadSpec,
    "sharegpt": ShareGPTWorkloadSpec,
    "shared_prefix": SharedPrefixWorkloadSpec,
    "multi_turn": MultiTurnWorkloadSpec,
    "trace": TraceWorkloadSpec,
}
WORKLOAD_KINDS = tuple(WORKLOAD_SPECS)
