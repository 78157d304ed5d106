"""Engines under test, discriminated by `kind`; each kind's spec lives here, its behaviour in engines/."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from raybench.config.base import StrictModel

__all__ = ["ENGINE_KINDS", "ENGINE_SPECS", "EndpointEngineSpec", "EngineSpec", "SimulatedEngineSpec"]


class _EngineBase(StrictModel):
    id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    config: str = Field(default="", description="a short label of the configuration, shown in reports")


class SimulatedEngineSpec(_EngineBase):
    """The built-in simulated continuous-batching engine (no GPU); serves a real OpenAI API."""

    kind: Literal["simulated"]
    profile: str = Field(default="vllm", description="engine profile whose behaviour is simulated")
    max_num_seqs: int = Field(default=16, ge=1)
    iteration_overhead_ms: float = Field(default=6.0, ge=0)
    decode_ms_per_seq: float = Field(default=0.9, ge=0)
    prefill_ms_per_token: float = Field(default=0.02, ge=0)
    replicas: int = Field(default=1, ge=1)
    num_cpus: float = Field(default=0.5, gt=0)


class EndpointEngineSpec(_EngineBase):
    """An OpenAI-compatible server that already runs; raybench only checks it and drives it."""

    kind: Literal["endpoint"]
    base_url: str = Field(description="e.g. http://127.0.0.1:8000 (without /v1)")
    motor: str = Field(default="openai-compatible", description="engine name recorded as `motor`")
    motor_version: str = "unknown"
    api_key_env: str | None = Field(
        default=None, description="name of an environment variable holding the API key (never the key)"
    )
    health_path: str | None = Field(default="/health", description="liveness path; null when the server has none")
    ignore_eos: bool = Field(default=True, description="send ignore_eos/min_tokens to pin the output length")

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, e.g. http://127.0.0.1:8000; got {value!r}")
        return value.rstrip("/").removesuffix("/v1")


EngineSpec = Annotated[SimulatedEngineSpec | EndpointEngineSpec, Field(discriminator="kind")]
ENGINE_SPECS: dict[str, type[StrictModel]] = {"simulated": SimulatedEngineSpec, "endpoint": EndpointEngineSpec}
ENGINE_KINDS = tuple(ENGINE_SPECS)
