"""The `dynamo` kind: spec validation, and the exact command lines and environment of every Dynamo process."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from raybench.config.dynamo import DynamoEngineSpec
from raybench.config.job import ModelSpec
from raybench.deploy.dynamo_actor import PORT_RANGE, fill, low_free_port
from raybench.engines import adapter_for
from raybench.engines.dynamo import DynamoAdapter

PLANES = ["--discovery-backend", "etcd", "--request-plane", "tcp", "--event-plane", "nats"]


def adapter(**spec: Any) -> DynamoAdapter:
    parsed = DynamoEngineSpec.model_validate({"kind": "dynamo", **spec})
    made = adapter_for(parsed, ModelSpec(name="meta-llama/Llama-3.1-70B-Instruct"), "dyn")
    assert isinstance(made, DynamoAdapter)
    return made


def test_topology_is_aggregated_or_prefill_plus_decode() -> None:
    with pytest.raises(ValidationError, match=r"aggregated: \{workers: N\}, or both prefill"):
        DynamoEngineSpec.model_validate({"kind": "dynamo", "prefill": {"workers": 1}})
    with pytest.raises(ValidationError, match="not both"):
        DynamoEngineSpec.model_validate({"kind": "dynamo", "aggregated": {}, "prefill": {}, "decode": {}})
    with pytest.raises(ValidationError, match="backend: mocker only"):
        DynamoEngineSpec.model_validate({"kind": "dynamo", "aggregated": {}, "kv_transfer": {"bandwidth_gb_s": 9}})
    with pytest.raises(ValidationError, match=r"Extra inputs"):
        DynamoEngineSpec.model_validate({"kind": "dynamo", "aggregated": {"worker": 2}})


def test_infrastructure_choices_say_what_to_write() -> None:
    base = {"kind": "dynamo", "aggregated": {}}
    with pytest.raises(ValidationError, match="write start: false"):
        DynamoEngineSpec.model_validate({**base, "infrastructure": {"etcd_endpoints": "http://h:2379"}})
    with pytest.raises(ValidationError, match="needs etcd_endpoints"):
        DynamoEngineSpec.model_validate({**base, "infrastructure": {"start": False}})
    with pytest.raises(ValidationError, match="nats: false"):
        DynamoEngineSpec.model_validate({**base, "infrastructure": {"start": False, "etcd_endpoints": "http://h:1"}})
    with pytest.raises(ValidationError, match="discovery is file"):
        DynamoEngineSpec.model_validate({**base, "infrastructure": {"discovery": "file", "etcd_endpoints": "x"}})
    with pytest.raises(ValidationError, match="secrets"):
        DynamoEngineSpec.model_validate({**base, "env": {"HF_TOKEN": "x"}})


def test_mocker_workers_per_role() -> None:
    a = adapter(backend="mocker", speedup_ratio=4, prefill={"workers": 1}, decode={"workers": 2},
                kv_transfer={"bandwidth_gb_s": 50}, max_num_seqs=16, enable_prefix_caching=False)  # fmt: skip
    head = ["{python}", "-m", "dynamo.mocker", "--model-path", "{workdir}", "--model-name", a.served_model,
            "--endpoint"]  # fmt: skip
    common = ["--engine-type", "vllm", "--speedup-ratio", "4.0"]
    prefill = a.worker_plan("prefill", 0, nats=True)
    assert prefill.argv == [*head, "dyn://dynamo.prefill.generate", *common, "--disaggregation-mode", "prefill",
                            "--bootstrap-ports", "{port:bootstrap}", "--kv-transfer-bandwidth", "50.0",
                            "--max-num-seqs", "16", "--no-enable-prefix-caching", *PLANES]  # fmt: skip
    assert prefill.ports == ("system", "bootstrap") and prefill.num_gpus == 0.0
    assert prefill.env == {"DYN_SYSTEM_ENABLED": "true", "DYN_SYSTEM_PORT": "{port:system}"}
    assert set(prefill.files) == {"config.json", "tokenizer.json", "tokenizer_config.json"}
    decode = a.worker_plan("decode", 1, nats=False)
    assert decode.name == "decode-1" and "dyn://dynamo.backend.generate" in decode.argv
    assert decode.argv[-2:] == ["--event-plane", "zmq"] and "--bootstrap-ports" not in decode.argv
    assert a.expected_instances() == {"prefill": 1, "backend": 2}
    assert a.engine_args()["topology"] == "disaggregated 1P+2D"


def test_vllm_disaggregated_uses_nixl_kv_transfer_config() -> None:
    a = adapter(prefill={"workers": 2, "tensor_parallel_size": 2}, decode={"workers": 2, "tensor_parallel_size": 2},
                max_num_batched_tokens=8192, gpu_memory_utilization=0.9, extra_args=["--enforce-eager"])  # fmt: skip
    plan = a.worker_plan("prefill", 0, nats=True)
    kv = json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_producer"}, separators=(",", ":"))
    assert plan.argv == ["{python}", "-m", "dynamo.vllm", "--model", "meta-llama/Llama-3.1-70B-Instruct",
                         "--served-model-name", "meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "2",
                         "--disaggregation-mode", "prefill", "--kv-transfer-config", kv,
                         "--max-num-batched-tokens", "8192", "--gpu-memory-utilization", "0.9", *PLANES,
                         "--enforce-eager"]  # fmt: skip
    assert plan.num_gpus == 2.0 and plan.files == {}
    decode = a.worker_plan("decode", 0, nats=True).argv
    assert '"kv_role":"kv_consumer"' in decode[decode.index("--kv-transfer-config") + 1]
    assert a.kv_transfer()["connector"] == "nixl"


def test_sglang_and_trtllm_disaggregation_flags() -> None:
    sglang = adapter(backend="sglang", prefill={"workers": 1}, decode={"workers": 1}, max_num_seqs=64)
    argv = sglang.worker_plan("prefill", 0, nats=True).argv
    assert argv[:4] == ["{python}", "-m", "dynamo.sglang", "--model-path"]
    assert (
        argv[argv.index("--disaggregation-transfer-backend") : argv.index("--disaggregation-transfer-backend") + 4]
    ) == ["--disaggregation-transfer-backend", "nixl", "--disaggregation-bootstrap-port", "{port:bootstrap}"]
    assert "--max-running-requests" in argv
    trtllm = adapter(backend="trtllm", prefill={"workers": 1}, decode={"workers": 1})
    plan = trtllm.worker_plan("decode", 0, nats=True)
    at = plan.argv.index("--extra-engine-args")
    assert plan.argv[at - 2 : at + 2] == [
        "--disaggregation-mode",
        "decode",
        "--extra-engine-args",
        "{workdir}/engine.yaml",
    ]
    assert plan.files == {
        "engine.yaml": "cache_transceiver_config:\n  backend: NIXL\ndisable_overlap_scheduler: true\n"
    }
    assert trtllm.worker_plan("decode", 0, nats=True).argv[2] == "dynamo.trtllm"


def test_frontend_infrastructure_and_environment() -> None:
    a = adapter(aggregated={"workers": 4}, router_mode="round-robin", namespace="bench")
    front = a.frontend_plan(nats=True)
    assert front.argv == ["{python}", "-m", "dynamo.frontend", "--http-host", "{host}", "--http-port", "{port:http}",
                          "--router-mode", "round-robin", "--namespace", "bench", *PLANES]  # fmt: skip
    assert (front.ready_port, front.metrics_port) == ("http", "http")
    etcd, nats = a.infrastructure_plans()
    assert etcd.argv[0] == "etcd" and "http://{host}:{port:client}" in etcd.argv and etcd.ready_port == "client"
    assert nats.argv == ["nats-server", "-a", "{host}", "-p", "{port:client}", "-js", "-sd", "{workdir}/nats"]
    env = a.discovery_env("http://127.0.0.1:1", "nats://127.0.0.1:2", None)
    assert env["ETCD_ENDPOINTS"] == "http://127.0.0.1:1" and env["NATS_SERVER"] == "nats://127.0.0.1:2"
    assert env["DYN_NAMESPACE"] == "bench" and env["DYN_DISCOVERY_BACKEND"] == "etcd"
    for name in ("DYN_TCP_RPC_HOST", "DYN_EVENT_PLANE_HOST", "DYN_TCP_RESPONSE_STREAM_HOST", "DYN_SYSTEM_HOST",
                 "DYN_HTTP_RPC_HOST"):  # fmt: skip
        assert env[name] == "{host}"
    file_env = adapter(aggregated={}, infrastructure={"discovery": "file", "nats": False}).discovery_env(
        None, None, "/k"
    )
    assert file_env["DYN_FILE_KV"] == "/k" and "ETCD_ENDPOINTS" not in file_env
    assert adapter(aggregated={}, infrastructure={"start": False, "etcd_endpoints": "http://e:1", "nats": False}
                   ).infrastructure_plans() == []  # fmt: skip


def test_requests_go_to_the_frontend_only() -> None:
    a = adapter(aggregated={"workers": 2})
    endpoint = a.endpoint(["http://f:1", "http://w:2", "http://w:3"], "chat")
    assert endpoint.base_urls == ("http://f:1",) and endpoint.api == "chat"
    assert a.motor() == "dynamo-vllm" and a.engine_args()["kv_transfer_resolved"] == {}
    assert a.metric_map().names["generation_tokens_total"] == ("dynamo_frontend_output_tokens_total",)


def test_placeholders_are_filled_per_node() -> None:
    text = fill("{python} --host {host} --port {port:http} -x {port:system}", "127.0.1.2", {"http": 81, "system": 82})
    assert text.split()[1:] == ["--host", "127.0.1.2", "--port", "81", "-x", "82"]
    port = low_free_port("127.0.0.1")
    assert PORT_RANGE[0] <= port <= PORT_RANGE[1] < 32768  # Dynamo reads DYN_SYSTEM_PORT as a signed 16-bit int
