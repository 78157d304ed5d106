"""Prometheus text exposition of the simulated engine's stats, under vLLM's metric names.

Both the V0 (`vllm:gpu_cache_usage_perc`) and V1 (`vllm:kv_cache_usage_perc`) names of KV usage
are exposed; prefix-cache counters count tokens, as V1's do. The process's own CPU time is
exposed twice: as the standard `process_cpu_seconds_total`, and as `raybench_sim_cpu_seconds_total`,
a name no real engine exposes, which raybench's scraper maps to each step's `sim_cpu_share` (the
evidence that the simulator itself never was the bottleneck of a step).
"""

from __future__ import annotations

from raybench.engines.sim.core import CoreStats

__all__ = ["CONTENT_TYPE", "render_metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# (name, type, help, stats attribute): the subset of vLLM's metrics a benchmark scrapes.
_METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", "running"),
    ("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", "waiting"),
    ("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", "kv_usage"),
    ("vllm:gpu_cache_usage_perc", "gauge", "GPU KV-cache usage. 1 means 100 percent usage.", "kv_usage"),
    ("vllm:num_preemptions_total", "counter", "Cumulative number of preemptions.", "preemptions"),
    (
        "vllm:prefix_cache_queries_total",
        "counter",
        "Prefix cache queries, in terms of number of queried tokens.",
        "prefix_queries_tokens",
    ),
    (
        "vllm:prefix_cache_hits_total",
        "counter",
        "Prefix cache hits, in terms of number of cached tokens.",
        "prefix_hits_tokens",
    ),
    ("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", "prompt_tokens_total"),
    (
        "vllm:generation_tokens_total",
        "counter",
        "Number of generation tokens processed.",
        "generation_tokens_total",
    ),
    (
        "vllm:request_success_total",
        "counter",
        "Count of successfully processed requests.",
        "requests_finished",
    ),
)


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render_metrics(model: str, stats: CoreStats, *, cpu_seconds: float, late_seconds: float = 0.0) -> str:
    """One `# HELP`, `# TYPE` and sample line per metric; vLLM's are labelled with the model name."""
    label = f'{{model_name="{_escape_label(model)}"}}'
    lines: list[str] = []
    for name, kind, help_text, attribute in _METRICS:
        value = float(getattr(stats, attribute))
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", f"{name}{label} {value!r}"]
    lines += [
        "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.",
        "# TYPE process_cpu_seconds_total counter",
        f"process_cpu_seconds_total {float(cpu_seconds)!r}",
        "# HELP raybench_sim_cpu_seconds_total CPU time (user and system) the simulated engine's process used.",
        "# TYPE raybench_sim_cpu_seconds_total counter",
        f"raybench_sim_cpu_seconds_total {float(cpu_seconds)!r}",
        "# HELP raybench_sim_wakeup_late_seconds_total Time the simulator's iterations ended after their"
        " simulated instants (grows when the simulator itself is short of CPU).",
        "# TYPE raybench_sim_wakeup_late_seconds_total counter",
        f"raybench_sim_wakeup_late_seconds_total {float(late_seconds)!r}",
    ]
    return "\n".join(lines) + "\n"
