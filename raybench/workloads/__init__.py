"""Prompt sources by kind (synthetic, sharegpt, shared_prefix, multi_turn, trace) and token counting; importing
registers them."""

from raybench.workloads import multi_turn as _multi_turn
from raybench.workloads import shared_prefix as _shared_prefix
from raybench.workloads import sharegpt as _sharegpt
from raybench.workloads import synthetic as _synthetic
from raybench.workloads import trace as _trace
from raybench.workloads.base import Prompt, PromptSource, register_source, source_for, workload_fingerprint
from raybench.workloads.multi_turn import MultiTurnSource
from raybench.workloads.shared_prefix import SharedPrefixSource
from raybench.workloads.sharegpt import ShareGPTSource
from raybench.workloads.synthetic import SyntheticSource
from raybench.workloads.tokenizer import ApproxCounter, HFTokenCounter, TokenCounter, load_counter
from raybench.workloads.trace import TraceSource

del _multi_turn, _shared_prefix, _sharegpt, _synthetic, _trace

__all__ = [
    "ApproxCounter",
    "HFTokenCounter",
    "MultiTurnSource",
    "Prompt",
    "PromptSource",
    "ShareGPTSource",
    "SharedPrefixSource",
    "SyntheticSource",
    "TokenCounter",
    "TraceSource",
    "load_counter",
    "register_source",
    "source_for",
    "workload_fingerprint",
]
