"""`raybench workload --preview`: the ISL/OSL distributions of a job's prompts, as text histograms."""

from __future__ import annotations

import numpy as np
from rich.console import Console
from rich.table import Table

from raybench.workloads.base import PromptSource, workload_fingerprint

__all__ = ["histogram_rows", "print_preview"]

_BAR = 40


def histogram_rows(values: np.ndarray, bins: int = 12) -> list[tuple[str, int, str]]:
    """(range label, count, bar) per bin; equal-width bins over the observed range."""
    if values.size == 0:
        return []
    low, high = int(values.min()), int(values.max())
    edges = np.linspace(low, high + 1, num=min(bins, high - low + 1) + 1)
    counts, _ = np.histogram(values, bins=edges)
    peak = max(int(counts.max()), 1)
    rows = []
    for i, count in enumerate(counts):
        lo, hi = int(np.ceil(edges[i])), int(np.ceil(edges[i + 1])) - 1
        rows.append((f"{lo}-{hi}" if hi > lo else str(lo), int(count), "█" * round(_BAR * int(count) / peak)))
    return rows


def print_preview(source: PromptSource, count: int, console: Console) -> None:
    """Sample the first `count` prompts (the ones a run sends first) and show their lengths."""
    prompts = [source.prompt(i) for i in range(count)]
    exact = "exact (tokenizer)" if source.counter.exact else "approximate (no tokenizer: words)"
    console.print(f"workload [bold]{source.kind}[/] · {count} prompts · token counts {exact}")
    console.print(f"fingerprint {workload_fingerprint(source)}")
    natural = source.describe().get("natural_rate_per_s")
    if natural is not None:  # a trace: its own pace, what `rates_per_s` scales (rate = natural x speed-up)
        console.print(f"trace natural rate {natural:.3f} req/s: rates_per_s [{natural:.3g}] replays it at 1x")
    sessions = {p.session_id for p in prompts if p.session_id is not None}
    if sessions:
        turns = max((p.turn or 0) for p in prompts) + 1
        console.print(f"{len(sessions)} sessions in these prompts, up to {turns} turns each")
    for name, values in (
        ("input tokens (ISL)", np.array([p.input_tokens for p in prompts])),
        ("output tokens (OSL, requested)", np.array([p.output_tokens for p in prompts])),
    ):
        pct = np.percentile(values, [50, 90, 99])
        title = (
            f"{name}: mean {values.mean():.1f}, P50 {pct[0]:.0f}, P90 {pct[1]:.0f}, P99 {pct[2]:.0f}, "
            f"min {values.min()}, max {values.max()}"
        )
        table = Table(title=title, title_justify="left", show_edge=False)
        table.add_column("tokens", justify="right")
        table.add_column("count", justify="right")
        table.add_column("")
        for label, n, bar in histogram_rows(values):
            table.add_row(label, str(n), bar)
        console.print(table)
