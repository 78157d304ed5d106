"""Engine adapters, one file per kind, registered by name; importing this registers them all."""

from raybench.engines import dynamo as _dynamo
from raybench.engines import endpoint as _endpoint
from raybench.engines import llamacpp as _llamacpp
from raybench.engines import lmdeploy as _lmdeploy
from raybench.engines import ray_serve_llm as _ray_serve_llm
from raybench.engines import sglang as _sglang
from raybench.engines import simulated as _simulated
from raybench.engines import tgi as _tgi
from raybench.engines import trtllm as _trtllm
from raybench.engines import vllm as _vllm
from raybench.engines.base import EngineAdapter, LaunchPlan, adapter_for, known_kinds, register

del _dynamo, _endpoint, _llamacpp, _lmdeploy, _ray_serve_llm, _sglang, _simulated, _tgi, _trtllm, _vllm

__all__ = ["EngineAdapter", "LaunchPlan", "adapter_for", "known_kinds", "register"]
