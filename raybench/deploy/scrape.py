"""Server-metrics scraping during a step: every second, each replica's /metrics, mapped to raybench names."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from typing import Any

from raybench.engines.metrics import MetricMap, extract, extract_iteration_stats, parse_prometheus

__all__ = ["MetricsScraper", "ray_metrics_urls"]


def ray_metrics_urls(nodes: list[dict[str, Any]]) -> list[str]:
    """Each alive Ray node's metrics-export base URL (where Ray's metrics agent serves /metrics), from
    `ray.nodes()` entries; Ray Serve LLM's engine metrics are exported there by the node running each replica."""
    return [
        f"http://{n['NodeManagerAddress']}:{n['MetricsExportPort']}"
        for n in nodes
        if n.get("Alive") and n.get("MetricsExportPort")
    ]


class MetricsScraper:
    """A background thread in the driver; `start(step)` ... `stop()` returns the step's sample rows.

    Scraping never fails a step: an unreachable or malformed /metrics only counts in `errors`.
    """

    def __init__(self, base_urls: list[str], metric_map: MetricMap, interval_s: float = 1.0) -> None:
        self._targets = [(f"replica-{i}", url) for i, url in enumerate(base_urls)]
        self._map = metric_map
        self._interval_s = interval_s
        self._rows: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._step = 0
        self.errors = 0

    @property
    def enabled(self) -> bool:
        return bool(self._map.names) and bool(self._targets)

    def start(self, step_index: int) -> None:
        self._rows, self._step, self.errors = [], step_index, 0
        if not self.enabled:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="raybench-metrics-scraper", daemon=True)
        self._thread.start()

    def stop(self) -> list[dict[str, Any]]:
        """Stop (after one last scrape, so counters have an end value) and return the rows."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=10)
            self._thread = None
            self.scrape_once()
        return self._rows

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            self.scrape_once()
            next_at += self._interval_s  # absolute instants: no drift from scrape duration
            self._stop.wait(max(next_at - time.monotonic(), 0.0))

    def scrape_once(self) -> None:
        for replica, base_url in self._targets:
            scraped_ns = time.time_ns()
            values: dict[str, tuple[str, float]] = {}
            reached = False
            for source_map in (self._map, *self._map.more):  # the first endpoint that has a name wins
                text = _fetch(base_url + source_map.path)
                if text is None:
                    continue
                reached = True
                if source_map.format == "trtllm-json":
                    found = extract_iteration_stats(text, source_map)
                else:
                    found = extract(parse_prometheus(text), source_map)
                for metric, sample in found.items():
                    values.setdefault(metric, sample)
            self.errors += 0 if reached else 1
            for metric, (source, value) in values.items():
                self._rows.append({
                    "step_index": self._step, "replica": replica, "scraped_ns": scraped_ns,
                    "metric": metric, "source": source, "value": value,
                })  # fmt: skip


def _fetch(url: str) -> str | None:
    """The body at `url`, or None when it cannot be read (an endpoint this engine version lacks, a dead server)."""
    try:
        with urllib.request.urlopen(url, timeout=2.0) as response:
            return str(response.read().decode("utf-8", errors="replace"))
    except (OSError, urllib.error.URLError, ValueError):
        return None
