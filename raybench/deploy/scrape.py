"""Server-metrics scraping during a step: every second, each replica's /metrics, mapped to raybench names."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from typing import Any

from raybench.engines.metrics import MetricMap, extract, extract_iteration_stats, parse_prometheus

__all__ = ["MetricsScraper"]


class MetricsScraper:
    """A background thread in the driver; `start(step)` ... `stop()` returns the step's sample rows.

    Scraping never fails a step: an unreachable or malformed /metrics only counts in `errors`.
    """

    def __init__(self, base_urls: list[str], metric_map: MetricMap, interval_s: float = 1.0) -> None:
        self._targets = [(f"replica-{i}", url + metric_map.path) for i, url in enumerate(base_urls)]
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
        for replica, url in self._targets:
            scraped_ns = time.time_ns()
            try:
                with urllib.request.urlopen(url, timeout=2.0) as response:
                    text = response.read().decode("utf-8", errors="replace")
            except (OSError, urllib.error.URLError, ValueError):
                self.errors += 1
                continue
            if self._map.format == "trtllm-json":
                values = extract_iteration_stats(text, self._map)
            else:
                values = extract(parse_prometheus(text), self._map)
            for metric, (source, value) in values.items():
                self._rows.append({
                    "step_index": self._step, "replica": replica, "scraped_ns": scraped_ns,
                    "metric": metric, "source": source, "value": value,
                })  # fmt: skip
