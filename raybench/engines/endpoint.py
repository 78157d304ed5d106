"""The `endpoint` engine kind: an OpenAI-compatible server that is already running."""

from __future__ import annotations

from raybench.config.engine import EndpointEngineSpec
from raybench.engines.base import EngineAdapter, LaunchPlan, register
from raybench.engines.metrics import DIALECTS, MetricMap
from raybench.environment import read_secret
from raybench.loadgen.endpoint import Endpoint

__all__ = ["EndpointAdapter"]


@register("endpoint")
class EndpointAdapter(EngineAdapter):
    """Nothing to launch or tear down: raybench checks readiness and sends load."""

    spec: EndpointEngineSpec
    managed = False

    @property
    def health_path(self) -> str | None:
        return self.spec.health_path

    def launch_plan(self, host: str, port: int) -> LaunchPlan:
        raise NotImplementedError("endpoint engines are not launched by raybench")

    def external_urls(self) -> list[str]:
        return [self.spec.base_url, *self.spec.more_base_urls]

    def metric_map(self) -> MetricMap:
        return DIALECTS[self.spec.metrics or "none"]

    def motor(self) -> str:
        return self.spec.motor

    def motor_version(self) -> str:
        return self.spec.motor_version

    def endpoint(self, base_urls: list[str], api: str) -> Endpoint:
        key = read_secret(self.spec.api_key_env) if self.spec.api_key_env else None
        return Endpoint(
            base_urls=tuple(base_urls),
            model=self.served_model,
            api="chat" if api == "chat" else "completions",
            api_key=key,
            supports_ignore_eos=self.spec.ignore_eos,
            balance=self.spec.balance,
        )
