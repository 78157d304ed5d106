"""Flag mapping per engine kind: the exact command line, and the kind's fake accepts every flag of it."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from raybench.config.job import ModelSpec
from raybench.engines import adapter_for
from raybench.engines.base import LaunchPlan
from raybench.engines.server import ServerEngineAdapter
from raybench.testing.engines import FAKE_KINDS, parse_engine_args

MODEL = ModelSpec(name="meta-llama/Llama-3.1-70B-Instruct", precision="fp8")
FULL: dict[str, Any] = {
    "tensor_parallel_size": 4, "kv_cache_dtype": "fp8", "enable_prefix_caching": True,
    "enable_chunked_prefill": True, "max_num_seqs": 64, "max_num_batched_tokens": 8192,
    "gpu_memory_utilization": 0.9, "extra_args": ["--seed", "0"],
}  # fmt: skip


def _adapter(kind: str, **fields: Any) -> ServerEngineAdapter:
    from raybench.config.engine import ENGINE_SPECS

    spec = ENGINE_SPECS[kind].model_validate({"kind": kind, **fields})
    adapter = adapter_for(spec, MODEL, f"{kind}-0")
    assert isinstance(adapter, ServerEngineAdapter)
    return adapter


def test_vllm_exact_command() -> None:
    plan = _adapter("vllm", **FULL).launch_plan("127.0.0.1", 8001)
    assert plan.argv == [
        "vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct", "--host", "127.0.0.1", "--port", "8001",
        "--served-model-name", "meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "4",
        "--pipeline-parallel-size", "1", "--quantization", "fp8", "--kv-cache-dtype", "fp8",
        "--enable-prefix-caching", "--enable-chunked-prefill", "--max-num-seqs", "64",
        "--max-num-batched-tokens", "8192", "--gpu-memory-utilization", "0.9", "--seed", "0",
    ]  # fmt: skip


def test_vllm_switches_off_and_unset_defaults() -> None:
    argv = _adapter("vllm", enable_prefix_caching=False, precision="bf16").launch_plan("h", 1).argv
    assert "--no-enable-prefix-caching" in argv
    assert argv[argv.index("--dtype") + 1] == "bfloat16"
    assert not any(a.startswith("--enable-chunked") or a.startswith("--no-enable-chunked") for a in argv)
    assert "--max-num-seqs" not in argv


def test_sglang_command() -> None:
    argv = _adapter("sglang", **FULL).launch_plan("127.0.0.1", 30000).argv
    assert argv[:3] == ["python", "-m", "sglang.launch_server"]
    pairs = dict(zip(argv[3::2], argv[4::2]))
    assert pairs["--model-path"] == MODEL.name
    assert pairs["--tp-size"] == "4"
    assert pairs["--quantization"] == "fp8"
    assert pairs["--kv-cache-dtype"] == "fp8_e4m3"
    assert pairs["--max-running-requests"] == "64"
    assert pairs["--chunked-prefill-size"] == "8192"
    assert pairs["--mem-fraction-static"] == "0.9"
    assert "--enable-metrics" in argv
    assert "--disable-radix-cache" not in argv
    off = _adapter("sglang", enable_prefix_caching=False, enable_chunked_prefill=False).launch_plan("h", 1).argv
    assert "--disable-radix-cache" in off
    assert off[off.index("--chunked-prefill-size") + 1] == "-1"


def test_trtllm_command_and_llm_api_options() -> None:
    plan = _adapter("trtllm", **FULL).launch_plan("127.0.0.1", 8000)
    assert plan.argv[:2] == ["trtllm-serve", MODEL.name]
    pairs = dict(zip(plan.argv[2::2], plan.argv[3::2]))
    assert pairs["--tp_size"] == "4"
    assert pairs["--backend"] == "pytorch"
    assert pairs["--max_batch_size"] == "64"
    assert pairs["--max_num_tokens"] == "8192"
    assert pairs["--kv_cache_free_gpu_memory_fraction"] == "0.9"
    assert pairs["--extra_llm_api_options"] == f"{LaunchPlan.WORKDIR}/extra_llm_api_options.yaml"
    options = yaml.safe_load(plan.files["extra_llm_api_options.yaml"])
    assert options == {
        "enable_iter_perf_stats": True,
        "return_perf_metrics": True,
        "enable_chunked_prefill": True,
        "kv_cache_config": {"dtype": "fp8", "enable_block_reuse": True},
    }


def test_lmdeploy_command() -> None:
    argv = _adapter("lmdeploy", precision="int4-awq", kv_cache_dtype="int8", enable_prefix_caching=True,
                    max_num_seqs=32, max_num_batched_tokens=4096).launch_plan("0.0.0.0", 23333).argv  # fmt: skip
    assert argv[:4] == ["lmdeploy", "serve", "api_server", MODEL.name]
    pairs = {flag: argv[i + 1] for i, flag in enumerate(argv[:-1]) if flag.startswith("--")}
    assert pairs["--server-port"] == "23333"
    assert pairs["--model-format"] == "awq"
    assert pairs["--quant-policy"] == "8"
    assert pairs["--max-batch-size"] == "32"
    assert pairs["--max-prefill-token-num"] == "4096"
    assert {"--enable-prefix-caching", "--enable-metrics"} <= set(argv)


def test_tgi_command_and_prefix_caching_env() -> None:
    plan = _adapter("tgi", tensor_parallel_size=2, enable_prefix_caching=False, max_num_batched_tokens=4096)
    launch = plan.launch_plan("0.0.0.0", 3000)
    pairs = dict(zip(launch.argv[1::2], launch.argv[2::2]))
    assert launch.argv[0] == "text-generation-launcher"
    assert pairs["--model-id"] == MODEL.name
    assert pairs["--num-shard"] == "2"
    assert pairs["--quantize"] == "fp8"
    assert pairs["--max-batch-prefill-tokens"] == "4096"
    assert launch.env == {"PREFIX_CACHING": "0"}


def test_llamacpp_command() -> None:
    argv = _adapter("llamacpp", precision="gguf", model_path="/m/llama.Q4_K_M.gguf", max_num_seqs=8,
                    kv_cache_dtype="int8", ctx_size=16384).launch_plan("127.0.0.1", 8080).argv  # fmt: skip
    assert argv[0] == "llama-server"
    pairs = dict(zip(argv[1::2], argv[2::2]))
    assert pairs["--model"] == "/m/llama.Q4_K_M.gguf"
    assert pairs["--alias"] == MODEL.name
    assert pairs["--parallel"] == "8"
    assert pairs["--ctx-size"] == "16384"
    assert pairs["--cache-type-k"] == pairs["--cache-type-v"] == "q8_0"
    assert {"--cont-batching", "--metrics"} <= set(argv)


def test_ray_serve_llm_config() -> None:
    adapter = _adapter("ray_serve_llm", tensor_parallel_size=4, accelerator_type="H100", max_num_seqs=64,
                       enable_prefix_caching=True, engine_kwargs={"max_model_len": 8192})  # fmt: skip
    argv = adapter.launch_plan("127.0.0.1", 8000).argv
    assert argv[1:3] == ["-m", "raybench.engines.ray_serve_llm"]
    config = json.loads(argv[argv.index("--config-json") + 1])
    assert config["model_loading_config"] == {"model_id": MODEL.name, "model_source": MODEL.name}
    assert config["accelerator_type"] == "H100"
    assert config["engine_kwargs"] == {
        "tensor_parallel_size": 4, "pipeline_parallel_size": 1, "quantization": "fp8",
        "enable_prefix_caching": True, "max_num_seqs": 64, "max_model_len": 8192,
    }  # fmt: skip
    assert adapter.num_gpus == 0.0  # Serve's LLM deployment takes the GPUs


@pytest.mark.parametrize("kind", FAKE_KINDS)
def test_fake_accepts_the_exact_command(kind: str, tmp_path: Any) -> None:
    fields: dict[str, Any] = {"model_path": "/m.gguf", "precision": "gguf"} if kind == "llamacpp" else {}
    if kind != "ray_serve_llm":
        fields["extra_args"] = []
    adapter = _adapter(kind, **fields)
    plan = adapter.launch_plan("127.0.0.1", 9000)
    for name, text in plan.files.items():
        (tmp_path / name).write_text(text)
    argv = [a.replace(LaunchPlan.WORKDIR, str(tmp_path)) for a in plan.argv]
    own = len(adapter.entrypoint())
    config = parse_engine_args(kind, argv[own:])
    assert (config.port, config.served_model) == (9000, adapter.served_model)


def test_fake_rejects_an_unknown_flag() -> None:
    with pytest.raises(SystemExit):
        parse_engine_args("vllm", ["m", "--tensor-parallel", "4"])


def test_launcher_replaces_the_engine_command_and_gpus_default_to_tp_times_pp() -> None:
    adapter = _adapter("vllm", launcher=["docker", "run", "vllm/vllm-openai"], tensor_parallel_size=2,
                       pipeline_parallel_size=2)  # fmt: skip
    assert adapter.launch_plan("h", 1).argv[:4] == ["docker", "run", "vllm/vllm-openai", MODEL.name]
    assert adapter.num_gpus == 4.0
    assert _adapter("vllm", num_gpus=0).num_gpus == 0.0
