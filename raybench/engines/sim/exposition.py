"""Prometheus text exposition of the simulated engine's scheduler stats, under vLLM's metric names."""

from __future__ import annotations

from raybench.engines.sim.scheduler import SchedulerStats

__all__ = ["CONTENT_TYPE", "render_metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# (name, type, help, stats attribute): the subset of vLLM's metrics a benchmark scrapes.
_METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", "running"),
    ("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", "waiting"),
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


def render_metrics(model: str, stats: SchedulerStats) -> str:
    """One `# HELP`, `# TYPE` and sample line per metric, each labelled with the model name."""
    label = f'{{model_name="{_escape_label(model)}"}}'
    lines: list[str] = []
    for name, kind, help_text, attribute in _METRICS:
        value = float(getattr(stats, attribute))
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", f"{name}{label} {value!r}"]
    return "\n".join(lines) + "\n"
