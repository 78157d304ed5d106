"""The `dynamo` engine kind: NVIDIA Dynamo's command lines and environment for etcd, NATS, frontend and workers.

No Ray here: this builds `ProcessPlan`s (argv templates) that raybench/deploy/dynamo.py places on the
cluster. Placeholders in argv and env values are filled where the process starts: `{host}` (the node's
address), `{python}` (that node's interpreter), `{port:NAME}` (a free port there) and `{workdir}`.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass, field
from typing import Any, ClassVar

from raybench.config.dynamo import DynamoEngineSpec, DynamoPoolSpec
from raybench.engines.base import EngineAdapter, LaunchPlan, register
from raybench.engines.dynamo_flags import backend_flags, role_component, trtllm_engine_yaml, vllm_kv_config
from raybench.engines.metrics import MetricMap
from raybench.engines.readiness import ReadinessRule
from raybench.engines.server import flag
from raybench.loadgen.endpoint import Endpoint

__all__ = ["DYNAMO_METRICS", "DynamoAdapter", "ProcessPlan", "role_component"]

# The hosts every Dynamo process binds or advertises (Dynamo's docs, "environment variables").
HOST_VARS = (
    "DYN_TCP_RPC_HOST",
    "DYN_EVENT_PLANE_HOST",
    "DYN_TCP_RESPONSE_STREAM_HOST",
    "DYN_SYSTEM_HOST",
    "DYN_HTTP_RPC_HOST",
)
WORKER_MODULES = {
    "vllm": "dynamo.vllm",
    "sglang": "dynamo.sglang",
    "trtllm": "dynamo.trtllm",
    "mocker": "dynamo.mocker",
}
MODEL_FLAGS = {"vllm": "--model", "sglang": "--model-path", "trtllm": "--model", "mocker": "--model-path"}
TINY_MODEL_DIR = "{workdir}"  # the worker's own folder holds the tiny model's files

# Frontend names (dynamo_frontend_*) feed raybench's canonical server metrics, so each step counts what
# users saw once; workers' names (their system port) go under worker_* and are summed per role in reports.
DYNAMO_METRICS = MetricMap(
    {
        "running_requests": ("dynamo_frontend_inflight_requests",),
        "waiting_requests": ("dynamo_frontend_queued_requests",),
        "prompt_tokens_total": ("dynamo_frontend_input_sequence_tokens_sum",),
        "generation_tokens_total": ("dynamo_frontend_output_tokens_total",),
        "ttft_seconds_sum": ("dynamo_frontend_time_to_first_token_seconds_sum",),
        "ttft_seconds_count": ("dynamo_frontend_time_to_first_token_seconds_count",),
        "itl_seconds_sum": ("dynamo_frontend_inter_token_latency_seconds_sum",),
        "itl_seconds_count": ("dynamo_frontend_inter_token_latency_seconds_count",),
        "worker_running_requests": (
            "vllm:num_requests_running",
            "sglang:num_running_reqs",
            "dynamo_component_inflight_requests",
        ),
        "worker_waiting_requests": ("vllm:num_requests_waiting", "sglang:num_queue_reqs"),
        "worker_kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"),
        "worker_requests_total": ("dynamo_component_requests_total",),
        "worker_ttft_seconds_sum": ("vllm:time_to_first_token_seconds_sum", "sglang:time_to_first_token_seconds_sum"),
        "worker_ttft_seconds_count": (
            "vllm:time_to_first_token_seconds_count",
            "sglang:time_to_first_token_seconds_count",
        ),
    }
)


@dataclass(frozen=True)
class ProcessPlan:
    """One Dynamo process to start on a node: argv/env templates, the ports to pick there, its resources."""

    name: str
    role: str  # etcd, nats, frontend, aggregated, prefill, decode
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    ports: tuple[str, ...] = ()
    ready_port: str | None = None  # accepts TCP connections once the process is up
    metrics_port: str | None = None  # serves Prometheus /metrics (frontend: its HTTP port; workers: system port)
    files: dict[str, str] = field(default_factory=dict)  # name -> text, written to {workdir}
    num_cpus: float = 1.0
    num_gpus: float = 0.0


@register("dynamo")
class DynamoAdapter(EngineAdapter):
    """Readiness: the frontend's /health answers 200 even with no workers, so its body is read until every
    pool's instances have registered, then /v1/models must list the model (engines/dynamo_health.py)."""

    spec: DynamoEngineSpec
    deployment: ClassVar[str] = "dynamo"  # raybench/deploy/dynamo.py stands it up, not replica actors

    @property
    def num_cpus(self) -> float:
        return self.spec.frontend.num_cpus

    @property
    def preferred_port(self) -> int | None:
        return self.spec.frontend.port

    @property
    def served_model(self) -> str:
        return self.spec.served_model_name or self.model.name

    @property
    def model_path(self) -> str:
        if self.spec.model_path:
            return self.spec.model_path
        return TINY_MODEL_DIR if self.spec.backend == "mocker" else self.model.name

    def readiness(self) -> ReadinessRule:
        return ReadinessRule("/health")

    def metric_map(self) -> MetricMap:
        return DYNAMO_METRICS

    def motor(self) -> str:
        return f"dynamo-{self.spec.backend}"

    def motor_version(self) -> str:
        try:
            return importlib.metadata.version("ai-dynamo")
        except importlib.metadata.PackageNotFoundError:
            return "unknown"

    def endpoint(self, base_urls: list[str], api: str) -> Endpoint:
        """Requests go to the frontend only (the first URL); the others are workers' metrics ports."""
        return super().endpoint(base_urls[:1], api)

    def expected_instances(self) -> dict[str, int]:
        """Dynamo component -> how many worker instances must have registered with the frontend."""
        out: dict[str, int] = {}
        for role, pool in self.spec.pools():
            out[role_component(role)] = out.get(role_component(role), 0) + pool.workers
        return out

    def kv_transfer(self) -> dict[str, Any]:
        """The P/D KV-transfer settings as passed to the workers (empty when aggregated)."""
        if not self.spec.disaggregated:
            return {}
        out: dict[str, Any] = {"connector": self.spec.kv_transfer.connector}
        if self.spec.backend == "vllm":
            out["kv_transfer_config"] = self._vllm_kv_config("kv_both")
        elif self.spec.backend == "sglang":
            out["disaggregation_transfer_backend"] = self.spec.kv_transfer.connector
        elif self.spec.backend == "trtllm":
            out["cache_transceiver_config"] = {"backend": self.spec.kv_transfer.connector.upper()}
        else:
            out["mocker_kv_transfer_bandwidth_gb_s"] = self.spec.kv_transfer.bandwidth_gb_s
        return out

    def engine_args(self) -> dict[str, Any]:
        pools = {role: pool.workers for role, pool in self.spec.pools()}
        topology = (
            "disaggregated " + "+".join(f"{n}{r[0].upper()}" for r, n in pools.items())
            if self.spec.disaggregated
            else f"aggregated x{pools['aggregated']}"
        )
        return {**self.spec.model_dump(mode="json"), "topology": topology, "kv_transfer_resolved": self.kv_transfer()}

    # --- processes -----------------------------------------------------------------------------------

    def discovery_env(
        self, etcd_endpoints: str | None, nats_server: str | None, file_kv_dir: str | None
    ) -> dict[str, str]:
        """What every Dynamo process needs to find the others (ETCD_ENDPOINTS, NATS_SERVER or DYN_FILE_KV)."""
        env = {name: "{host}" for name in HOST_VARS}
        env |= {"DYN_NAMESPACE": self.spec.namespace, "DYN_DISCOVERY_BACKEND": self.spec.infrastructure.discovery}
        if etcd_endpoints:
            env["ETCD_ENDPOINTS"] = etcd_endpoints
        if nats_server:
            env["NATS_SERVER"] = nats_server
        if file_kv_dir:
            env["DYN_FILE_KV"] = file_kv_dir
        return {**env, **self.spec.env}

    def infrastructure_plans(self) -> list[ProcessPlan]:
        """etcd and NATS for the head node, when the spec asks raybench to start them."""
        infra = self.spec.infrastructure
        if not infra.start:
            return []
        plans = []
        if infra.discovery == "etcd":
            url = "http://{host}:{port:client}"
            peer = "http://{host}:{port:peer}"
            argv = [
                "etcd",
                "--name",
                "raybench",
                "--data-dir",
                "{workdir}/etcd",
                "--listen-client-urls",
                url,
                "--advertise-client-urls",
                url,
                "--listen-peer-urls",
                peer,
                "--initial-advertise-peer-urls",
                peer,
                "--initial-cluster",
                f"raybench={peer}",
            ]
            plans.append(ProcessPlan("etcd", "etcd", argv, ports=("client", "peer"), ready_port="client", num_cpus=0.1))
        if infra.nats:
            argv = ["nats-server", "-a", "{host}", "-p", "{port:client}", "-js", "-sd", "{workdir}/nats"]
            plans.append(ProcessPlan("nats", "nats", argv, ports=("client",), ready_port="client", num_cpus=0.1))
        return plans

    def planes(self, nats: bool) -> list[str]:
        """Discovery and event-plane flags shared by the frontend and the workers."""
        return [
            "--discovery-backend",
            self.spec.infrastructure.discovery,
            "--request-plane",
            "tcp",
            "--event-plane",
            "nats" if nats else "zmq",
        ]

    def frontend_plan(self, nats: bool) -> ProcessPlan:
        port = str(self.spec.frontend.port) if self.spec.frontend.port else "{port:http}"
        argv = [
            "{python}",
            "-m",
            "dynamo.frontend",
            "--http-host",
            "{host}",
            "--http-port",
            port,
            "--router-mode",
            self.spec.router_mode,
            "--namespace",
            self.spec.namespace,
            *self.planes(nats),
            *self.spec.frontend.extra_args,
        ]
        ports = () if self.spec.frontend.port else ("http",)
        ready = "http" if ports else None
        return ProcessPlan(
            "frontend",
            "frontend",
            argv,
            ports=ports,
            ready_port=ready,
            metrics_port=ready,
            num_cpus=self.spec.frontend.num_cpus,
        )

    def launch_plan(self, host: str, port: int) -> LaunchPlan:
        """The frontend's command with host and port filled (the workers come from `worker_plan`)."""
        plan = self.frontend_plan(self.spec.infrastructure.nats)
        argv = [
            a.replace("{host}", host).replace("{port:http}", str(port)).replace("{python}", "python") for a in plan.argv
        ]
        return LaunchPlan(argv=argv, port=port, env=dict(self.spec.env), ready_timeout_s=self.spec.ready_timeout_s)

    def worker_plan(self, role: str, index: int, nats: bool) -> ProcessPlan:
        """Worker `index` of pool `role` (aggregated, prefill or decode)."""
        pool = dict(self.spec.pools())[role]
        backend = self.spec.backend
        ports = ("system", "bootstrap") if role == "prefill" and backend in ("mocker", "sglang") else ("system",)
        argv = [
            "{python}",
            "-m",
            WORKER_MODULES[backend],
            MODEL_FLAGS[backend],
            self.model_path,
            *flag("--served-model-name" if backend != "mocker" else "--model-name", self.served_model),
            *self._backend_flags(role, pool),
            *self.planes(nats),
            *self.spec.extra_args,
            *pool.extra_args,
        ]
        env = {"DYN_SYSTEM_ENABLED": "true", "DYN_SYSTEM_PORT": "{port:system}", **pool.env}
        gpus = (
            pool.num_gpus if pool.num_gpus is not None else (0.0 if backend == "mocker" else pool.tensor_parallel_size)
        )
        return ProcessPlan(
            f"{role}-{index}",
            role,
            argv,
            env=env,
            ports=ports,
            ready_port="system",
            metrics_port="system",
            files=self.files(role),
            num_cpus=pool.num_cpus,
            num_gpus=float(gpus),
        )

    def files(self, role: str) -> dict[str, str]:
        """Files a worker's command line names under {workdir}: the mocker's built-in tiny model (a tokenizer
        whose every output id decodes to text) when no model_path; TRT-LLM's disaggregation options."""
        if self.spec.backend == "trtllm" and role != "aggregated":
            return {"engine.yaml": self.trtllm_engine_yaml()}
        if self.spec.backend != "mocker" or self.spec.model_path:
            return {}
        from raybench.testing.dynamo_model import model_files  # lazy: needs the tokenizers package

        return model_files()

    def _backend_flags(self, role: str, pool: DynamoPoolSpec) -> list[str]:
        return backend_flags(self.spec, role, pool)

    def _vllm_kv_config(self, kv_role: str) -> str:
        return vllm_kv_config(self.spec, kv_role)

    def trtllm_engine_yaml(self) -> str:
        """TRT-LLM's disaggregation options file (the cache transceiver moves the KV cache)."""
        return trtllm_engine_yaml(self.spec)
